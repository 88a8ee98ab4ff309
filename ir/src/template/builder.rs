//! The kernel builder: statements appended in program order, loops and branches written
//! as closures, so a template reads top to bottom like the program it builds.

use super::{Template, TemplateError};
use crate::dtype::DType;
use crate::expr::{Buffer, Expr, Scope, ThreadAxis, Var};
use crate::fragment::{FragLayout, FragOp, FragRef, FragRole, Fragment, MmaShape, RowOp};
use crate::func::{AtomicAdd, For, ForKind, GridControl, KernelHints, MappingLoop, Stmt};
use crate::mapping::TaskMapping;
use crate::tma::{BarRef, MBarrier, SwizzledTile};

/// Indices of a buffer access: an array (`[i, j]`), a `Vec<Expr>` or a slice.
pub trait Indices {
    fn into_indices(self) -> Vec<Expr>;
}

impl<E: Into<Expr>, const N: usize> Indices for [E; N] {
    fn into_indices(self) -> Vec<Expr> {
        self.into_iter().map(Into::into).collect()
    }
}
impl Indices for Vec<Expr> {
    fn into_indices(self) -> Vec<Expr> {
        self
    }
}
impl Indices for &[Expr] {
    fn into_indices(self) -> Vec<Expr> {
        self.to_vec()
    }
}

/// One entry of a statement list being built: a statement, or a `let` whose body is
/// everything after it in the list.
enum Item {
    Stmt(Stmt),
    Let(Var, Expr),
}

/// Writes one kernel's body. Obtained from [`Template::kernel`].
pub struct KernelBuilder<'t> {
    t: &'t mut Template,
    /// The open statement lists: the kernel body, then one per enclosing loop or branch.
    frames: Vec<Vec<Item>>,
    block_idx: [Expr; 3],
    thread_idx: [Expr; 3],
    grid: [i64; 3],
    threads: [i64; 3],
    hints: KernelHints,
}

const BLOCK: [(ThreadAxis, &str); 3] = [
    (ThreadAxis::BlockIdxX, "bx"),
    (ThreadAxis::BlockIdxY, "by"),
    (ThreadAxis::BlockIdxZ, "bz"),
];
const THREAD: [(ThreadAxis, &str); 3] = [
    (ThreadAxis::ThreadIdxX, "tx"),
    (ThreadAxis::ThreadIdxY, "ty"),
    (ThreadAxis::ThreadIdxZ, "tz"),
];

pub(super) fn build_kernel(
    t: &mut Template,
    grid: [i64; 3],
    threads: [i64; 3],
    body: impl FnOnce(&mut KernelBuilder),
) -> (Stmt, KernelHints) {
    let mut axes: Vec<(Var, i64, ThreadAxis)> = Vec::new();
    let mut index = |t: &mut Template, extents: [i64; 3], table: &[(ThreadAxis, &str); 3]| {
        let mut out = [Expr::int(0), Expr::int(0), Expr::int(0)];
        for (d, &(axis, name)) in table.iter().enumerate() {
            let extent = extents[d];
            if extent < 1 {
                t.fail(|n| TemplateError::Extent {
                    template: n.to_string(),
                    what: format!("the launch's {axis}"),
                    extent,
                });
            } else if extent > 1 {
                let v = Var::index(t.fresh(name));
                out[d] = v.expr();
                axes.push((v, extent, axis));
            }
        }
        out
    };
    let block_idx = index(t, grid, &BLOCK);
    let thread_idx = index(t, threads, &THREAD);
    let mut k = KernelBuilder {
        t,
        frames: vec![Vec::new()],
        block_idx,
        thread_idx,
        grid,
        threads,
        hints: KernelHints::default(),
    };
    body(&mut k);
    let hints = k.hints;
    let mut stmt = k.close();
    for (var, extent, axis) in axes.into_iter().rev() {
        stmt = Stmt::For(Box::new(For {
            var,
            extent,
            kind: ForKind::Bound(axis),
            body: stmt,
        }));
    }
    (stmt, hints)
}

impl KernelBuilder<'_> {
    /// `threadIdx.x` (0 when the block has one thread along x).
    pub fn thread_x(&self) -> Expr {
        self.thread_idx[0].clone()
    }
    /// `threadIdx.y`.
    pub fn thread_y(&self) -> Expr {
        self.thread_idx[1].clone()
    }
    /// `threadIdx.z`.
    pub fn thread_z(&self) -> Expr {
        self.thread_idx[2].clone()
    }
    /// `blockIdx.x` (0 when the grid has one block along x).
    pub fn block_x(&self) -> Expr {
        self.block_idx[0].clone()
    }
    /// `blockIdx.y`.
    pub fn block_y(&self) -> Expr {
        self.block_idx[1].clone()
    }
    /// `blockIdx.z`.
    pub fn block_z(&self) -> Expr {
        self.block_idx[2].clone()
    }
    /// Blocks per grid along x, y, z.
    pub fn grid(&self) -> [i64; 3] {
        self.grid
    }
    /// Threads per block along x, y, z.
    pub fn threads(&self) -> [i64; 3] {
        self.threads
    }

    /// Asks CUDA's compiler to leave room for `n` blocks per multiprocessor
    /// (`__launch_bounds__(threads, n)`: at most about 65536 / (threads · n) registers per
    /// thread). Nothing else changes; other backends have no such control.
    pub fn min_blocks_per_sm(&mut self, n: u32) {
        self.hints.min_blocks_per_sm = n;
    }

    /// Lets the kernel's global → shared copies complete asynchronously, at the copying
    /// thread's next barrier (see [`crate::kernel::Kernel::async_copies`]): CUDA sm_80+
    /// issues them as `cp.async`, so a tile for the next step is fetched without passing
    /// through registers while this step computes.
    pub fn async_copies(&mut self) {
        self.hints.async_copies = true;
    }

    /// [`KernelBuilder::async_copies`] for a pipeline of `stages` shared buffers: a copy
    /// need only be complete `stages - 1` barriers after it was issued (see
    /// [`crate::kernel::Kernel::async_pending`]), so `stages - 1` tiles are in flight
    /// while one is computed. The kernel reads a stage only that many barriers after
    /// filling it.
    pub fn async_pipeline(&mut self, stages: u32) {
        self.hints.async_copies = true;
        self.hints.async_pending = stages.saturating_sub(2);
    }

    /// A shared-memory array of the block (`__shared__`, `var<workgroup>`), at exactly
    /// this shape: a double buffer is `[2, rows, cols]`.
    pub fn shared(&mut self, name: &str, shape: &[i64], dtype: DType) -> Buffer {
        self.alloc(name, shape, dtype, Scope::Shared)
    }

    /// A shared-memory array laid over the bytes of `hosts` ([`Buffer::overlay`]): shared
    /// arrays of this kernel, declared before it one after another, which the kernel is
    /// done with before it first writes this one (and does not read again after).
    pub fn shared_over(
        &mut self,
        name: &str,
        shape: &[i64],
        dtype: DType,
        hosts: &[&Buffer],
    ) -> Buffer {
        let hosts: Vec<Buffer> = hosts.iter().map(|&h| h.clone()).collect();
        let declared = |h: &Buffer| h.scope() == Scope::Shared && self.t.allocs.contains(h);
        if hosts.is_empty() || !hosts.iter().all(declared) {
            let names: Vec<&str> = hosts.iter().map(|h| h.name()).collect();
            self.t.fail(|n| TemplateError::Invalid {
                template: n.to_string(),
                what: format!(
                    "shared overlay `{name}` is laid over [{}]: each host must be a shared array the template declared before it",
                    names.join(", ")
                ),
            });
        }
        let b = self.alloc(name, shape, dtype, Scope::Shared);
        let b = Buffer::overlay(b.name(), b.shape().to_vec(), dtype, &hosts);
        // `alloc` recorded the plain array: the overlay takes its place.
        if let Some(last) = self.t.allocs.last_mut() {
            *last = b.clone();
        }
        b
    }

    /// A per-thread array (registers, when every index is known after unrolling).
    pub fn local(&mut self, name: &str, shape: &[i64], dtype: DType) -> Buffer {
        self.alloc(name, shape, dtype, Scope::Local)
    }

    fn alloc(&mut self, name: &str, shape: &[i64], dtype: DType, scope: Scope) -> Buffer {
        for (dim, &extent) in shape.iter().enumerate() {
            if extent < 1 {
                self.t.fail(|n| TemplateError::Extent {
                    template: n.to_string(),
                    what: format!("dimension {dim} of {scope} `{name}`"),
                    extent,
                });
            }
        }
        let b = Buffer::new(self.t.fresh(name), shape.to_vec(), dtype, scope);
        self.t.allocs.push(b.clone());
        b
    }

    /// `let name = value`: the statements that follow see the value by name. Returns the
    /// variable as an expression.
    pub fn let_(&mut self, name: &str, value: impl Into<Expr>) -> Expr {
        let value = value.into();
        let var = Var::new(self.t.fresh(name), value.dtype());
        self.push(Item::Let(var.clone(), value));
        var.expr()
    }

    /// `for name in range(extent)`, run in order by each thread.
    pub fn serial(&mut self, name: &str, extent: i64, body: impl FnOnce(&mut Self, Expr)) {
        self.for_kind(name, extent, ForKind::Serial, body)
    }

    /// `for name in T.unroll(extent)`: every emitter unrolls it (WGSL by writing the
    /// copies out), so local arrays indexed by its variable stay in registers.
    pub fn unroll(&mut self, name: &str, extent: i64, body: impl FnOnce(&mut Self, Expr)) {
        self.for_kind(name, extent, ForKind::Unrolled, body)
    }

    /// `for name in T.vectorized(extent)`: a copy whose indices are `base + name`, with
    /// bases lowering proves aligned, becomes one vector access (`float4`, `vec4<f32>`).
    pub fn vectorized(&mut self, name: &str, extent: i64, body: impl FnOnce(&mut Self, Expr)) {
        self.for_kind(name, extent, ForKind::Vectorized, body)
    }

    fn for_kind(
        &mut self,
        name: &str,
        extent: i64,
        kind: ForKind,
        body: impl FnOnce(&mut Self, Expr),
    ) {
        if extent < 1 {
            self.t.fail(|n| TemplateError::Extent {
                template: n.to_string(),
                what: format!("loop `{name}`"),
                extent,
            });
        }
        let var = Var::index(self.t.fresh(name));
        self.frames.push(Vec::new());
        body(self, var.expr());
        let body = self.close();
        self.push(Item::Stmt(Stmt::For(Box::new(For {
            var,
            extent: extent.max(1),
            kind,
            body,
        }))));
    }

    /// `for names in T.task_mapping(mapping, worker=worker)`: runs `body` for each task
    /// the mapping gives `worker` (a thread index, a warp `tx / 32`, a lane `tx % 32`,
    /// any `i32` expression), with the task's coordinates. `names` names them, comma-
    /// separated (`"i, k"`); there must be one per task dimension of the mapping.
    pub fn for_tasks<const N: usize>(
        &mut self,
        names: &str,
        mapping: TaskMapping,
        worker: impl Into<Expr>,
        body: impl FnOnce(&mut Self, [Expr; N]),
    ) {
        let names: Vec<&str> = names
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect();
        if let Err(source) = mapping.check() {
            self.t.fail(|n| TemplateError::Mapping {
                template: n.to_string(),
                source,
            });
        } else if mapping.rank() != N || names.len() != N {
            let vars = if mapping.rank() != N { N } else { names.len() };
            self.t.fail(|n| TemplateError::TaskVars {
                template: n.to_string(),
                mapping: mapping.to_string(),
                rank: mapping.rank(),
                vars,
            });
        }
        let task_vars: Vec<Var> = (0..N)
            .map(|d| Var::index(self.t.fresh(names.get(d).copied().unwrap_or("t"))))
            .collect();
        let exprs: [Expr; N] = std::array::from_fn(|d| task_vars[d].expr());
        self.frames.push(Vec::new());
        body(self, exprs);
        let body = self.close();
        self.push(Item::Stmt(Stmt::Mapping(Box::new(MappingLoop {
            mapping,
            worker: worker.into(),
            task_vars,
            body,
        }))));
    }

    /// `if cond: then`.
    pub fn if_(&mut self, cond: Expr, then: impl FnOnce(&mut Self)) {
        let then = self.nested(then);
        self.push(Item::Stmt(Stmt::If {
            cond,
            then: Box::new(then),
            otherwise: None,
        }));
    }

    /// `if cond: then else: otherwise`.
    pub fn if_else(
        &mut self,
        cond: Expr,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        let then = self.nested(then);
        let otherwise = self.nested(otherwise);
        self.push(Item::Stmt(Stmt::If {
            cond,
            then: Box::new(then),
            otherwise: Some(Box::new(otherwise)),
        }));
    }

    /// `buffer[indices] = value`.
    pub fn store(&mut self, buffer: &Buffer, indices: impl Indices, value: impl Into<Expr>) {
        self.push(Item::Stmt(Stmt::Store {
            buffer: buffer.clone(),
            indices: indices.into_indices(),
            value: value.into(),
        }));
    }

    /// `if cond: buffer[indices] = value` (a store at a tile edge).
    pub fn store_if(
        &mut self,
        cond: Expr,
        buffer: &Buffer,
        indices: impl Indices,
        value: impl Into<Expr>,
    ) {
        let (indices, value) = (indices.into_indices(), value.into());
        self.if_(cond, |k| k.store(buffer, indices, value));
    }

    /// Copies `lanes` consecutive elements along the last dimension:
    /// `dst[.., d + v] = src[.., s + v]` for `v` in `0..lanes`, as one vector access
    /// where lowering proves both sides aligned, element by element otherwise.
    pub fn copy(
        &mut self,
        lanes: i64,
        dst: &Buffer,
        dst_indices: impl Indices,
        src: &Buffer,
        src_indices: impl Indices,
    ) {
        let (di, si) = (dst_indices.into_indices(), src_indices.into_indices());
        self.vectorized("v", lanes, |k, v| {
            k.store(dst, shifted(&di, &v), src.load(shifted(&si, &v)));
        });
    }

    /// [`KernelBuilder::copy`] where `cond` holds, `fallback` in every lane where it does
    /// not: the predicated load of a tile edge. `cond` must be the same for all lanes
    /// (test the first element of an aligned group against a bound that is a multiple of
    /// `lanes`) for the copy to be one vector access.
    #[allow(clippy::too_many_arguments)]
    pub fn copy_if(
        &mut self,
        lanes: i64,
        dst: &Buffer,
        dst_indices: impl Indices,
        src: &Buffer,
        src_indices: impl Indices,
        cond: Expr,
        fallback: impl Into<Expr>,
    ) {
        let (di, si) = (dst_indices.into_indices(), src_indices.into_indices());
        let fallback = fallback.into();
        self.vectorized("v", lanes, |k, v| {
            let load = src.load(shifted(&si, &v));
            // A condition that always holds is a plain copy.
            let value = match cond {
                Expr::Bool(true) => load,
                cond => Expr::if_then_else(cond, load, fallback),
            };
            k.store(dst, shifted(&di, &v), value);
        });
    }

    /// An array of `count` matrix fragments of one warp (see [`crate::fragment`]): the
    /// operand `role` of an `m×n×k` multiply, of `dtype`, laid out in memory as
    /// `layout` (accumulators are row-major). Which shapes a target runs is the
    /// emitter's to check: CUDA `m16n16k16`, Metal `m8n8k8`, WGSL square 8 or 16.
    pub fn fragment(
        &mut self,
        name: &str,
        role: FragRole,
        shape: MmaShape,
        dtype: DType,
        layout: FragLayout,
        count: u32,
    ) -> Fragment {
        if count == 0 || shape.m == 0 || shape.n == 0 || shape.k == 0 {
            self.t.fail(|n| TemplateError::Invalid {
                template: n.to_string(),
                what: format!("fragment `{name}`: shape {shape} × {count} has no elements"),
            });
        }
        if !dtype.is_float() {
            self.t.fail(|n| TemplateError::Invalid {
                template: n.to_string(),
                what: format!("fragment `{name}` of {dtype}: fragments hold f16 or f32"),
            });
        }
        Fragment::new(self.t.fresh(name), role, shape, dtype, layout, count)
    }

    /// `frag[index]` ← `value` in every element.
    pub fn frag_fill(&mut self, frag: &Fragment, index: impl Into<Expr>, value: impl Into<Expr>) {
        self.frag_op(FragOp::Fill {
            dst: tile(frag, index),
            value: value.into(),
        });
    }

    /// `frag[index]` ← the tile of `buffer` whose first element is `buffer[origin]`; its
    /// rows run along the buffer's second-to-last dimension, its columns along the last
    /// (for a column-major fragment, the other way round).
    pub fn frag_load(
        &mut self,
        frag: &Fragment,
        index: impl Into<Expr>,
        buffer: &Buffer,
        origin: impl Indices,
    ) {
        self.frag_op(FragOp::Load {
            dst: tile(frag, index),
            buffer: buffer.clone(),
            origin: origin.into_indices(),
            stride: row_stride(buffer),
        });
    }

    /// The tile of `buffer` at `origin` ← accumulator `frag[index]` (row-major).
    pub fn frag_store(
        &mut self,
        frag: &Fragment,
        index: impl Into<Expr>,
        buffer: &Buffer,
        origin: impl Indices,
    ) {
        self.frag_op(FragOp::Store {
            src: tile(frag, index),
            buffer: buffer.clone(),
            origin: origin.into_indices(),
            stride: row_stride(buffer),
        });
    }

    /// `d[di] = a[ai] · b[bi] + c[ci]`.
    pub fn mma(
        &mut self,
        d: (&Fragment, Expr),
        a: (&Fragment, Expr),
        b: (&Fragment, Expr),
        c: (&Fragment, Expr),
    ) {
        self.frag_op(FragOp::Mma {
            d: tile(d.0, d.1),
            a: tile(a.0, a.1),
            b: tile(b.0, b.1),
            c: tile(c.0, c.1),
        });
    }

    /// Every element `(i, j)` of `dst[index]` ← `value(i, j, args)`, where `args[n]` is
    /// the element of tile `args[n]` at `(i, j)` (of a rows tile: at row `i`). See
    /// [`FragOp::Map`].
    pub fn frag_map(
        &mut self,
        dst: (&Fragment, Expr),
        args: &[(&Fragment, Expr)],
        value: impl FnOnce(Expr, Expr, &[Expr]) -> Expr,
    ) {
        let (row, col) = (Var::new("ei", DType::I32), Var::new("ej", DType::I32));
        let bound: Vec<(Var, FragRef)> = args
            .iter()
            .map(|(f, i)| {
                (
                    Var::new(format!("x_{}", f.name()), f.dtype()),
                    tile(f, i.clone()),
                )
            })
            .collect();
        let vals: Vec<Expr> = bound.iter().map(|(v, _)| Expr::Var(v.clone())).collect();
        let value = value(Expr::Var(row.clone()), Expr::Var(col.clone()), &vals);
        self.frag_op(FragOp::Map {
            dst: tile(dst.0, dst.1),
            row,
            col,
            args: bound,
            value,
        });
    }

    /// Rows tile `dst[di]` ← the row maxima or sums of accumulator tiles `src[si ..
    /// si + tiles]` ([`FragOp::RowReduce`]).
    pub fn frag_row_reduce(
        &mut self,
        dst: (&Fragment, Expr),
        src: (&Fragment, Expr),
        tiles: u32,
        op: RowOp,
    ) {
        self.frag_op(FragOp::RowReduce {
            dst: tile(dst.0, dst.1),
            src: tile(src.0, src.1),
            tiles,
            op,
        });
    }

    /// `A` tile `dst[di]` ← accumulator tile `src[si]` in `dst`'s type
    /// ([`FragOp::Convert`]).
    pub fn frag_convert(&mut self, dst: (&Fragment, Expr), src: (&Fragment, Expr)) {
        self.frag_op(FragOp::Convert {
            dst: tile(dst.0, dst.1),
            src: tile(src.0, src.1),
        });
    }

    /// An array of `count` mbarriers in shared memory ([`crate::tma`]).
    pub fn mbarrier(&mut self, name: &str, count: u32) -> MBarrier {
        MBarrier::new(self.t.fresh(name), count)
    }

    /// `d[di] += a · b`, a warpgroup MMA from shared memory (`wgmma.mma_async`); its
    /// results are there after a [`KernelBuilder::wgmma_wait`].
    pub fn wgmma(&mut self, d: (&Fragment, Expr), a: SwizzledTile, b: SwizzledTile) {
        self.frag_op(FragOp::WgMma {
            d: tile(d.0, d.1),
            a,
            b,
        });
    }

    /// `wgmma.fence`: before the first `wgmma` of a batch.
    pub fn wgmma_fence(&mut self) {
        self.frag_op(FragOp::WgFence);
    }

    /// `wgmma.commit_group`: closes the batch issued since the last one.
    pub fn wgmma_commit(&mut self) {
        self.frag_op(FragOp::WgCommit);
    }

    /// `wgmma.wait_group pending`: at most `pending` batches still running after it.
    pub fn wgmma_wait(&mut self, pending: u32) {
        self.frag_op(FragOp::WgWait { pending });
    }

    /// A TMA copy of the `rows × 64` box of `src` at `coords` into `dst` at `origin`,
    /// completing on `bar` (issue it from one thread).
    pub fn tma_load(
        &mut self,
        dst: &Buffer,
        origin: impl Indices,
        src: &Buffer,
        coords: impl Indices,
        rows: u32,
        bar: (&MBarrier, Expr),
    ) {
        self.frag_op(FragOp::Tma {
            dst: dst.clone(),
            origin: origin.into_indices(),
            src: src.clone(),
            coords: coords.into_indices(),
            rows,
            bar: bar_ref(bar),
        });
    }

    /// Initialises `bar` for `arrivals` arrivals a phase (from one thread, before a
    /// barrier).
    pub fn mbarrier_init(&mut self, bar: (&MBarrier, Expr), arrivals: u32) {
        self.frag_op(FragOp::BarInit {
            bar: bar_ref(bar),
            arrivals,
        });
    }

    /// Arrives on `bar`, expecting `bytes` more of copies in its phase.
    pub fn mbarrier_expect(&mut self, bar: (&MBarrier, Expr), bytes: u32) {
        self.frag_op(FragOp::BarExpect {
            bar: bar_ref(bar),
            bytes,
        });
    }

    /// Waits for the phase of `bar` with parity `parity` to complete.
    pub fn mbarrier_wait(&mut self, bar: (&MBarrier, Expr), parity: impl Into<Expr>) {
        self.frag_op(FragOp::BarWait {
            bar: bar_ref(bar),
            parity: parity.into(),
        });
    }

    fn frag_op(&mut self, op: FragOp) {
        self.push(Item::Stmt(Stmt::Frag(Box::new(op))));
    }

    /// A block-wide barrier (`__syncthreads()`). Every thread of the block must reach
    /// it: place it outside conditions that depend on the thread. A kernel with one gets
    /// no automatic barriers.
    pub fn barrier(&mut self) {
        self.push(Item::Stmt(Stmt::Barrier));
    }

    /// A device-scope memory fence (`__threadfence()`): see [`Stmt::Fence`].
    pub fn fence(&mut self) {
        self.push(Item::Stmt(Stmt::Fence));
    }

    /// `old[old_indices] = atomic_add(&counter[indices], value)` (the old value nowhere
    /// where `old` is `None`): see [`Stmt::AtomicAdd`].
    pub fn atomic_add(
        &mut self,
        counter: &Buffer,
        indices: impl Indices,
        value: impl Into<Expr>,
        old: Option<(&Buffer, Vec<Expr>)>,
    ) {
        self.push(Item::Stmt(Stmt::AtomicAdd(Box::new(AtomicAdd {
            buffer: counter.clone(),
            indices: indices.into_indices(),
            value: value.into(),
            old: old.map(|(b, i)| (b.clone(), i)),
        }))));
    }

    /// A hint that `buffer[indices]` (a global buffer: a parameter) will be read soon:
    /// CUDA brings the line holding it into L2, other targets emit nothing. See
    /// [`Stmt::Prefetch`].
    pub fn prefetch(&mut self, buffer: &Buffer, indices: impl Indices) {
        self.push(Item::Stmt(Stmt::Prefetch {
            buffer: buffer.clone(),
            indices: indices.into_indices(),
        }));
    }

    /// Waits here for the previous kernel (programmatic dependent launch) instead of
    /// at the top of the kernel: at most once, at the top level of the body (not under
    /// a loop or an `if`), after nothing but prefetches. See [`GridControl::Wait`].
    pub fn grid_wait(&mut self) {
        self.push(Item::Stmt(Stmt::Grid(GridControl::Wait)));
    }

    /// Lets the next kernel launch now (it still waits for this one at its own wait).
    /// See [`GridControl::LaunchDependents`].
    pub fn launch_dependents(&mut self) {
        self.push(Item::Stmt(Stmt::Grid(GridControl::LaunchDependents)));
    }

    /// Appends a statement built by hand.
    pub fn emit(&mut self, stmt: Stmt) {
        self.push(Item::Stmt(stmt));
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self)) -> Stmt {
        self.frames.push(Vec::new());
        f(self);
        self.close()
    }

    fn push(&mut self, item: Item) {
        // `frames` is never empty: `build_kernel` opens the body's list first and every
        // nested list is closed by the method that opened it.
        if let Some(frame) = self.frames.last_mut() {
            frame.push(item);
        }
    }

    /// Closes the innermost statement list: each `let` scopes what follows it.
    fn close(&mut self) -> Stmt {
        let items = self.frames.pop().unwrap_or_default();
        let mut tail: Vec<Stmt> = Vec::new();
        for item in items.into_iter().rev() {
            match item {
                Item::Stmt(s) => tail.push(s),
                Item::Let(var, value) => {
                    tail.reverse();
                    let body = Stmt::seq(std::mem::take(&mut tail));
                    tail.push(Stmt::Let {
                        var,
                        value,
                        body: Box::new(body),
                    });
                }
            }
        }
        tail.reverse();
        Stmt::seq(tail)
    }
}

fn bar_ref((bar, index): (&MBarrier, Expr)) -> BarRef {
    BarRef {
        bar: bar.clone(),
        index,
    }
}

fn tile(frag: &Fragment, index: impl Into<Expr>) -> FragRef {
    FragRef {
        frag: frag.clone(),
        index: index.into(),
    }
}

/// Elements between consecutive rows of a tile in `buffer`: its last extent.
fn row_stride(buffer: &Buffer) -> i64 {
    buffer.shape().last().copied().unwrap_or(1)
}

/// `indices` with `v` added to the last one (constants folded, so `0 + v` prints `v`).
fn shifted(indices: &[Expr], v: &Expr) -> Vec<Expr> {
    let mut out = indices.to_vec();
    if let Some(last) = out.last_mut() {
        *last = crate::arith::simplify(&(last.clone() + v.clone()));
    }
    out
}

/// `buffer[indices]` where `cond` holds, else `fallback`; the load never runs where
/// `cond` is false (a predicated load).
pub fn load_or(
    buffer: &Buffer,
    indices: impl Indices,
    cond: Expr,
    fallback: impl Into<Expr>,
) -> Expr {
    Expr::if_then_else(cond, buffer.load(indices.into_indices()), fallback)
}
