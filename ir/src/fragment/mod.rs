//! Matrix fragments: a warp's (or simdgroup's) tile of a matrix, the operand of the
//! matrix units (tensor cores, cooperative matrices, simdgroup matrices).
//!
//! A [`Fragment`] is an array of `count` tiles, each the whole matrix of one operand of
//! `D = A·B + C` for an `m×n×k` multiply: `A` is `m×k`, `B` is `k×n`, the accumulator is
//! `m×n`. It belongs to a warp, not a thread: the 32 threads of a warp execute every
//! [`FragOp`] together, with the same arguments, as `wmma::*_sync`, `coopLoad` and
//! `simdgroup_load` require. So fragment operations sit inside a task mapping whose
//! worker is the warp (`threadIdx.x / 32`), under conditions that are uniform per warp;
//! the interpreter checks both and reports a divergent or non-uniform use as an error.
//!
//! A tile in memory starts at an element (`origin`) and has its rows `stride` elements
//! apart. Element `(i, j)` of a row-major tile is at `origin + i·stride + j`; of a
//! column-major tile at `origin + j·stride + i` (the buffer holds the transpose).
//! Accumulators are always loaded and stored row-major; an `A` or `B` tile is stored in
//! its own layout (a template copies operand tiles global → shared through fragments where
//! element-wise copies are slow: WGSL stores an f16 at a time).
//!
//! Element-wise work on accumulators ([`FragOp::Map`], [`FragOp::RowReduce`],
//! [`FragOp::Convert`]) and the per-row values of a [`FragRole::Rows`] fragment keep a
//! flash-attention step in registers: the scores' row maxima and sums, the
//! probabilities, the output's rescaling. Their semantics are stated per element (row
//! `i`, column `j` of a tile); which thread holds which element is the target's
//! ([`elements`] has CUDA's), so only targets whose fragments expose their elements
//! emit them (`TargetLimits::fragment_elements`).
//!
//! In the printed IR (TVM's spelling):
//!
//! ```text
//! acc = T.alloc_fragment("accumulator", m=16, n=16, k=16, "float32", count=4)
//! T.tvm_fill_fragment(acc[i], T.float32(0))
//! T.tvm_load_matrix_sync(a[0], A_shared[(w * 16) * 40], stride=40, "row_major")
//! T.tvm_mma_sync(acc[i], a[0], b[i], acc[i])
//! T.tvm_store_matrix_sync(acc[i], C_shared[...], stride=72)
//! ```

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::dtype::DType;
use crate::expr::{Buffer, Expr, Scope, Var, fresh_id};
use crate::tma::{BarRef, Major, ROW, SwizzledTile};

pub mod elements;

/// Threads that execute a fragment operation together (a CUDA warp, a Metal simdgroup,
/// a Vulkan subgroup of 32).
pub const WARP: u32 = 32;

/// Threads of a warpgroup: the four consecutive warps that run a `wgmma` together.
pub const WARPGROUP: u32 = 128;

/// Rows of a warpgroup MMA (`wgmma.m64nNk16`): an accumulator of this height belongs to a
/// warpgroup, not a warp.
pub const WGMMA_M: u32 = 64;

/// The operand a fragment holds in `D = A·B + C`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FragRole {
    A,
    B,
    Accumulator,
    /// One value per row of an `m×n` accumulator tile (an `m×1` column): a row
    /// reduction's result, held as the accumulator's rows are (Triton's slice layout).
    Rows,
}

impl FragRole {
    /// TVM's scope name: `matrix_a`, `matrix_b`, `accumulator`.
    pub fn name(self) -> &'static str {
        match self {
            FragRole::A => "matrix_a",
            FragRole::B => "matrix_b",
            FragRole::Accumulator => "accumulator",
            FragRole::Rows => "rows",
        }
    }
}

/// How an operand tile is laid out in memory (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FragLayout {
    RowMajor,
    ColMajor,
}

impl FragLayout {
    pub fn name(self) -> &'static str {
        match self {
            FragLayout::RowMajor => "row_major",
            FragLayout::ColMajor => "col_major",
        }
    }
}

/// The shape of one matrix multiply-accumulate: `m×k` times `k×n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MmaShape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
}

impl fmt::Display for MmaShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m{}n{}k{}", self.m, self.n, self.k)
    }
}

struct FragNode {
    id: u64,
    name: String,
    role: FragRole,
    shape: MmaShape,
    dtype: DType,
    layout: FragLayout,
    count: u32,
}

/// An array of `count` fragments of one role, shape, element type and layout.
#[derive(Clone)]
pub struct Fragment(Arc<FragNode>);

impl Fragment {
    /// A new fragment array. The layout matters for `A` and `B` only (accumulators are
    /// row-major). Checked where templates declare it ([`crate::template`]).
    pub fn new(
        name: impl Into<String>,
        role: FragRole,
        shape: MmaShape,
        dtype: DType,
        layout: FragLayout,
        count: u32,
    ) -> Fragment {
        let layout = match role {
            FragRole::Accumulator | FragRole::Rows => FragLayout::RowMajor,
            _ => layout,
        };
        Fragment(Arc::new(FragNode {
            id: fresh_id(),
            name: name.into(),
            role,
            shape,
            dtype,
            layout,
            count,
        }))
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub fn role(&self) -> FragRole {
        self.0.role
    }
    pub fn shape(&self) -> MmaShape {
        self.0.shape
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn layout(&self) -> FragLayout {
        self.0.layout
    }
    /// How many tiles the array holds.
    pub fn count(&self) -> u32 {
        self.0.count
    }

    /// Whether the fragment belongs to a warpgroup (a `wgmma` accumulator, `m64nNk16`)
    /// rather than to a warp.
    pub fn is_warpgroup(&self) -> bool {
        self.0.role == FragRole::Accumulator && self.0.shape.m == WGMMA_M
    }

    /// Threads that own the fragment together: a warp, or a warpgroup.
    pub fn threads(&self) -> u32 {
        if self.is_warpgroup() { WARPGROUP } else { WARP }
    }

    /// Rows and columns of one tile: `m×k` for `A`, `k×n` for `B`, `m×n` for the
    /// accumulator.
    pub fn dims(&self) -> (u32, u32) {
        let s = self.0.shape;
        match self.0.role {
            FragRole::A => (s.m, s.k),
            FragRole::B => (s.k, s.n),
            FragRole::Accumulator => (s.m, s.n),
            FragRole::Rows => (s.m, 1),
        }
    }

    /// Elements of one tile.
    pub fn tile_len(&self) -> usize {
        let (r, c) = self.dims();
        r as usize * c as usize
    }

    /// Offset (relative to a tile's origin) of element `(i, j)` for a tile with rows
    /// `stride` apart.
    pub fn offset(&self, i: u32, j: u32, stride: i64) -> i64 {
        match self.0.layout {
            FragLayout::RowMajor => i as i64 * stride + j as i64,
            FragLayout::ColMajor => j as i64 * stride + i as i64,
        }
    }
}

impl PartialEq for Fragment {
    fn eq(&self, other: &Fragment) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Fragment {}
impl Hash for Fragment {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}

impl fmt::Debug for Fragment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} {} {}",
            self.0.name,
            self.0.role.name(),
            self.0.shape,
            self.0.dtype
        )
    }
}

/// One tile of a fragment array: `frag[index]`.
#[derive(Clone, Debug)]
pub struct FragRef {
    pub frag: Fragment,
    pub index: Expr,
}

impl FragRef {
    fn map(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> FragRef {
        FragRef {
            frag: self.frag.clone(),
            index: f(&self.index),
        }
    }
}

/// A warp-wide fragment operation, or one of Hopper's asynchronous operations (warpgroup
/// MMAs, TMA copies, mbarriers: [`crate::tma`]). In the Func IR `origin` holds one index
/// per buffer dimension; in a lowered kernel, one flat index.
#[derive(Clone, Debug)]
pub enum FragOp {
    /// Every element of `dst` becomes `value`.
    Fill { dst: FragRef, value: Expr },
    /// `dst` ← the tile of `buffer` at `origin`, rows `stride` apart.
    Load {
        dst: FragRef,
        buffer: Buffer,
        origin: Vec<Expr>,
        stride: i64,
    },
    /// The tile of `buffer` at `origin` ← `src` (an accumulator), row-major.
    Store {
        src: FragRef,
        buffer: Buffer,
        origin: Vec<Expr>,
        stride: i64,
    },
    /// Every element `(i, j)` of `dst` (an accumulator or rows tile) ← `value`, with
    /// `row` and `col` bound to `i` and `j` (`j` = 0 in a rows tile) and each `args[n].0`
    /// to element `(i, j)` of tile `args[n].1`: an accumulator of `dst`'s shape, or a
    /// rows tile, whose element `i` every column of the row reads. `value` may load from
    /// memory (an element's loads are its owning thread's).
    Map {
        dst: FragRef,
        row: Var,
        col: Var,
        args: Vec<(Var, FragRef)>,
        value: Expr,
    },
    /// Rows tile `dst` ← for each row `i`, the maximum or the sum of element `(i, j)`
    /// of accumulator tiles `src.index .. src.index + tiles`, over every column `j`.
    RowReduce {
        dst: FragRef,
        src: FragRef,
        tiles: u32,
        op: RowOp,
    },
    /// `A` tile `dst` ← accumulator tile `src` (`m×n` = `m×k`) rounded to `dst`'s type:
    /// the probabilities of one product as the next product's operand.
    Convert { dst: FragRef, src: FragRef },
    /// `d = a·b + c`, products and sums in the accumulator's type.
    Mma {
        d: FragRef,
        a: FragRef,
        b: FragRef,
        c: FragRef,
    },
    /// `d += a·b` for a warpgroup accumulator `d` (`m64nNk16`, f32) with both operands
    /// read from shared memory (`wgmma.mma_async`), asynchronously: neither `d` nor the
    /// operand tiles may be touched until a [`FragOp::WgWait`] has retired it.
    WgMma {
        d: FragRef,
        a: SwizzledTile,
        b: SwizzledTile,
    },
    /// Orders the warpgroup's register and shared-memory accesses before the `wgmma`s
    /// that follow (`wgmma.fence`).
    WgFence,
    /// Closes the batch of `wgmma`s issued since the last commit (`wgmma.commit_group`).
    WgCommit,
    /// Waits until at most `pending` committed batches are still running
    /// (`wgmma.wait_group`).
    WgWait { pending: u32 },
    /// One thread copies a `rows × 64` box of the global tensor `src`, whose element
    /// `[coords]` is the box's first, into shared `dst` at `origin` (swizzled; elements
    /// outside `src` read as zero), completing `rows · 128` bytes on `bar`
    /// (`cp.async.bulk.tensor` through a tensor map the launch builds from `src`).
    Tma {
        dst: Buffer,
        origin: Vec<Expr>,
        src: Buffer,
        coords: Vec<Expr>,
        rows: u32,
        bar: BarRef,
    },
    /// One thread initialises `bar` to expect `arrivals` arrivals a phase.
    BarInit { bar: BarRef, arrivals: u32 },
    /// One thread arrives on `bar` and adds `bytes` to the transactions its phase waits
    /// for (`mbarrier.arrive.expect_tx`).
    BarExpect { bar: BarRef, bytes: u32 },
    /// Each thread waits until the phase of `bar` with parity `parity` has completed
    /// (`mbarrier.try_wait.parity` in a loop).
    BarWait { bar: BarRef, parity: Expr },
}

/// The combination of a [`FragOp::RowReduce`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowOp {
    Max,
    Sum,
}

impl RowOp {
    pub fn name(self) -> &'static str {
        match self {
            RowOp::Max => "max",
            RowOp::Sum => "sum",
        }
    }
}

/// Columns of a warpgroup MMA's `B` operand and accumulator, and the operand tiles'
/// shapes: `A` is 64 × 16, `B` is 16 × `n`.
fn wg_dims(d: &FragRef) -> (i64, i64, i64) {
    let s = d.frag.shape();
    (s.m as i64, s.n as i64, s.k as i64)
}

impl FragOp {
    /// Every expression of the operation: fragment indices, the fill value, the origin.
    pub fn exprs(&self) -> Vec<&Expr> {
        match self {
            FragOp::Fill { dst, value } => vec![&dst.index, value],
            FragOp::Map {
                dst, args, value, ..
            } => std::iter::once(&dst.index)
                .chain(args.iter().map(|(_, r)| &r.index))
                .chain([value])
                .collect(),
            FragOp::RowReduce { dst, src, .. } | FragOp::Convert { dst, src } => {
                vec![&dst.index, &src.index]
            }
            FragOp::Load { dst: r, origin, .. } | FragOp::Store { src: r, origin, .. } => {
                std::iter::once(&r.index).chain(origin).collect()
            }
            FragOp::Mma { d, a, b, c } => vec![&d.index, &a.index, &b.index, &c.index],
            FragOp::WgMma { d, a, b } => std::iter::once(&d.index)
                .chain(&a.origin)
                .chain(&b.origin)
                .collect(),
            FragOp::WgFence | FragOp::WgCommit | FragOp::WgWait { .. } => vec![],
            FragOp::Tma {
                origin,
                coords,
                bar,
                ..
            } => origin
                .iter()
                .chain(coords)
                .chain(std::iter::once(&bar.index))
                .collect(),
            FragOp::BarInit { bar, .. } | FragOp::BarExpect { bar, .. } => vec![&bar.index],
            FragOp::BarWait { bar, parity } => vec![&bar.index, parity],
        }
    }

    /// The operation with every expression passed through `f`.
    pub fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> FragOp {
        let bar = |b: &BarRef, f: &mut dyn FnMut(&Expr) -> Expr| BarRef {
            bar: b.bar.clone(),
            index: f(&b.index),
        };
        let tile = |t: &SwizzledTile, f: &mut dyn FnMut(&Expr) -> Expr| SwizzledTile {
            origin: t.origin.iter().map(&mut *f).collect(),
            ..t.clone()
        };
        match self {
            FragOp::Fill { dst, value } => FragOp::Fill {
                dst: dst.map(f),
                value: f(value),
            },
            FragOp::Map {
                dst,
                row,
                col,
                args,
                value,
            } => FragOp::Map {
                dst: dst.map(f),
                row: row.clone(),
                col: col.clone(),
                args: args.iter().map(|(v, r)| (v.clone(), r.map(f))).collect(),
                value: f(value),
            },
            FragOp::RowReduce {
                dst,
                src,
                tiles,
                op,
            } => FragOp::RowReduce {
                dst: dst.map(f),
                src: src.map(f),
                tiles: *tiles,
                op: *op,
            },
            FragOp::Convert { dst, src } => FragOp::Convert {
                dst: dst.map(f),
                src: src.map(f),
            },
            FragOp::Load {
                dst,
                buffer,
                origin,
                stride,
            } => FragOp::Load {
                dst: dst.map(f),
                buffer: buffer.clone(),
                origin: origin.iter().map(&mut *f).collect(),
                stride: *stride,
            },
            FragOp::Store {
                src,
                buffer,
                origin,
                stride,
            } => FragOp::Store {
                src: src.map(f),
                buffer: buffer.clone(),
                origin: origin.iter().map(&mut *f).collect(),
                stride: *stride,
            },
            FragOp::Mma { d, a, b, c } => FragOp::Mma {
                d: d.map(f),
                a: a.map(f),
                b: b.map(f),
                c: c.map(f),
            },
            FragOp::WgMma { d, a, b } => FragOp::WgMma {
                d: d.map(f),
                a: tile(a, f),
                b: tile(b, f),
            },
            FragOp::WgFence | FragOp::WgCommit | FragOp::WgWait { .. } => self.clone(),
            FragOp::Tma {
                dst,
                origin,
                src,
                coords,
                rows,
                bar: b,
            } => FragOp::Tma {
                dst: dst.clone(),
                origin: origin.iter().map(&mut *f).collect(),
                src: src.clone(),
                coords: coords.iter().map(&mut *f).collect(),
                rows: *rows,
                bar: bar(b, f),
            },
            FragOp::BarInit { bar: b, arrivals } => FragOp::BarInit {
                bar: bar(b, f),
                arrivals: *arrivals,
            },
            FragOp::BarExpect { bar: b, bytes } => FragOp::BarExpect {
                bar: bar(b, f),
                bytes: *bytes,
            },
            FragOp::BarWait { bar: b, parity } => FragOp::BarWait {
                bar: bar(b, f),
                parity: f(parity),
            },
        }
    }

    /// The one buffer a fragment load or store touches, and whether it writes it.
    pub fn buffer(&self) -> Option<(&Buffer, bool)> {
        self.access().map(|(b, _, writes)| (b, writes))
    }

    /// The buffer a fragment load or store touches, the tile's origin in it, and whether
    /// it writes ([`FragOp::accesses`] for every operation).
    pub fn access(&self) -> Option<(&Buffer, &[Expr], bool)> {
        match self {
            FragOp::Load { buffer, origin, .. } => Some((buffer, origin, false)),
            FragOp::Store { buffer, origin, .. } => Some((buffer, origin, true)),
            _ => None,
        }
    }

    /// Every shared or local region the operation touches through an origin: the buffer,
    /// the origin, and whether it writes. A TMA copy's global source is addressed by
    /// coordinates, not an origin, and is not among them ([`FragOp::tma_source`]).
    pub fn accesses(&self) -> Vec<(&Buffer, &[Expr], bool)> {
        match self {
            FragOp::WgMma { a, b, .. } => vec![
                (&a.buffer, a.origin.as_slice(), false),
                (&b.buffer, b.origin.as_slice(), false),
            ],
            FragOp::Tma { dst, origin, .. } => vec![(dst, origin.as_slice(), true)],
            other => other.access().into_iter().collect(),
        }
    }

    /// The same operation with its [`FragOp::accesses`] replaced, in order (lowering
    /// flattens the origins and may move a buffer).
    pub fn with_accesses(&self, mut new: Vec<(Buffer, Vec<Expr>)>) -> FragOp {
        let mut next = || new.remove(0);
        match self {
            FragOp::Load { dst, stride, .. } => {
                let (buffer, origin) = next();
                FragOp::Load {
                    dst: dst.clone(),
                    buffer,
                    origin,
                    stride: *stride,
                }
            }
            FragOp::Store { src, stride, .. } => {
                let (buffer, origin) = next();
                FragOp::Store {
                    src: src.clone(),
                    buffer,
                    origin,
                    stride: *stride,
                }
            }
            FragOp::WgMma { d, a, b } => {
                let (ab, ao) = next();
                let (bb, bo) = next();
                FragOp::WgMma {
                    d: d.clone(),
                    a: SwizzledTile {
                        buffer: ab,
                        origin: ao,
                        ..a.clone()
                    },
                    b: SwizzledTile {
                        buffer: bb,
                        origin: bo,
                        ..b.clone()
                    },
                }
            }
            FragOp::Tma {
                src,
                coords,
                rows,
                bar,
                ..
            } => {
                let (dst, origin) = next();
                FragOp::Tma {
                    dst,
                    origin,
                    src: src.clone(),
                    coords: coords.clone(),
                    rows: *rows,
                    bar: bar.clone(),
                }
            }
            other => other.clone(),
        }
    }

    /// The same operation on another buffer at another origin (lowering flattens).
    pub fn with_access(&self, buffer: Buffer, origin: Vec<Expr>) -> FragOp {
        self.with_accesses(vec![(buffer, origin)])
    }

    /// The global tensor a TMA copy reads.
    pub fn tma_source(&self) -> Option<&Buffer> {
        match self {
            FragOp::Tma { src, .. } => Some(src),
            _ => None,
        }
    }

    /// The mbarrier the operation names.
    pub fn mbarrier(&self) -> Option<&BarRef> {
        match self {
            FragOp::Tma { bar, .. }
            | FragOp::BarInit { bar, .. }
            | FragOp::BarExpect { bar, .. }
            | FragOp::BarWait { bar, .. } => Some(bar),
            _ => None,
        }
    }

    /// Threads that run the operation together: a warp for fragment operations, a
    /// warpgroup for `wgmma` and its fences, and each thread on its own (1) for TMA
    /// copies and mbarrier operations.
    pub fn threads(&self) -> u32 {
        match self {
            FragOp::WgMma { .. } | FragOp::WgFence | FragOp::WgCommit | FragOp::WgWait { .. } => {
                WARPGROUP
            }
            FragOp::Tma { .. }
            | FragOp::BarInit { .. }
            | FragOp::BarExpect { .. }
            | FragOp::BarWait { .. } => 1,
            FragOp::Fill { dst: r, .. }
            | FragOp::Load { dst: r, .. }
            | FragOp::Store { src: r, .. }
            | FragOp::Map { dst: r, .. }
            | FragOp::RowReduce { dst: r, .. }
            | FragOp::Convert { dst: r, .. } => r.frag.threads(),
            FragOp::Mma { d, .. } => d.frag.threads(),
        }
    }

    /// The fragments the operation names, in order.
    pub fn fragments(&self) -> Vec<&Fragment> {
        match self {
            FragOp::Map { .. } | FragOp::RowReduce { .. } | FragOp::Convert { .. } => {
                self.frag_refs().into_iter().map(|r| &r.frag).collect()
            }
            FragOp::Fill { dst: r, .. }
            | FragOp::Load { dst: r, .. }
            | FragOp::Store { src: r, .. }
            | FragOp::WgMma { d: r, .. } => vec![&r.frag],
            FragOp::Mma { d, a, b, c } => vec![&d.frag, &a.frag, &b.frag, &c.frag],
            _ => vec![],
        }
    }

    /// The fragment tiles the operation names, in order.
    pub fn frag_refs(&self) -> Vec<&FragRef> {
        match self {
            FragOp::Map { dst, args, .. } => std::iter::once(dst)
                .chain(args.iter().map(|(_, r)| r))
                .collect(),
            FragOp::RowReduce { dst, src, .. } | FragOp::Convert { dst, src } => vec![dst, src],
            FragOp::Fill { dst: r, .. }
            | FragOp::Load { dst: r, .. }
            | FragOp::Store { src: r, .. }
            | FragOp::WgMma { d: r, .. } => vec![r],
            FragOp::Mma { d, a, b, c } => vec![d, a, b, c],
            _ => vec![],
        }
    }

    /// Checks roles, shapes and types: `Mma` takes an `A`, a `B` and two accumulators of
    /// one shape, `A` and `B` of one type; a tile's rows fit its stride; a `wgmma` takes
    /// a warpgroup accumulator and f16 tiles of shared buffers; a TMA copy goes from a
    /// global tensor to a shared buffer of the same type.
    pub fn check(&self) -> Result<(), String> {
        match self {
            FragOp::Map { .. } | FragOp::RowReduce { .. } | FragOp::Convert { .. } => {
                elements::check(self)
            }
            FragOp::Mma { d, a, b, c } => {
                let roles = [
                    (d, FragRole::Accumulator),
                    (a, FragRole::A),
                    (b, FragRole::B),
                    (c, FragRole::Accumulator),
                ];
                for (r, role) in roles {
                    if r.frag.role() != role {
                        return Err(format!(
                            "mma: `{}` is a {} fragment where a {} is expected",
                            r.frag.name(),
                            r.frag.role().name(),
                            role.name()
                        ));
                    }
                }
                if let Some(r) = [d, a, b, c].into_iter().find(|r| r.frag.is_warpgroup()) {
                    return Err(format!(
                        "mma: `{}` is a warpgroup accumulator (m64); it takes wgmma",
                        r.frag.name()
                    ));
                }
                let shape = d.frag.shape();
                if let Some(r) = [a, b, c].into_iter().find(|r| r.frag.shape() != shape) {
                    return Err(format!(
                        "mma: `{}` is {} but `{}` is {}",
                        r.frag.name(),
                        r.frag.shape(),
                        d.frag.name(),
                        shape
                    ));
                }
                if a.frag.dtype() != b.frag.dtype() || d.frag.dtype() != c.frag.dtype() {
                    return Err(format!(
                        "mma: A and B must share a type ({} vs {}), as must C and D ({} vs {})",
                        a.frag.dtype(),
                        b.frag.dtype(),
                        c.frag.dtype(),
                        d.frag.dtype()
                    ));
                }
                Ok(())
            }
            FragOp::Load {
                dst: r,
                buffer,
                stride,
                ..
            }
            | FragOp::Store {
                src: r,
                buffer,
                stride,
                ..
            } => {
                if r.frag.role() == FragRole::Rows {
                    return Err(format!(
                        "`{}` holds rows: it is neither loaded nor stored (map it into an accumulator)",
                        r.frag.name()
                    ));
                }
                let (rows, cols) = r.frag.dims();
                let along = match r.frag.layout() {
                    FragLayout::RowMajor => cols,
                    FragLayout::ColMajor => rows,
                };
                if buffer.dtype() != r.frag.dtype() {
                    return Err(format!(
                        "`{}` is {} but fragment `{}` is {}",
                        buffer.name(),
                        buffer.dtype(),
                        r.frag.name(),
                        r.frag.dtype()
                    ));
                }
                if *stride < along as i64 {
                    return Err(format!(
                        "`{}`: rows {stride} elements apart cannot hold a tile {along} wide",
                        buffer.name()
                    ));
                }
                Ok(())
            }
            FragOp::WgMma { d, a, b } => {
                let (m, n, k) = wg_dims(d);
                if !d.frag.is_warpgroup() || d.frag.dtype() != DType::F32 || k != 16 {
                    return Err(format!(
                        "wgmma: `{}` must be an f32 m64nNk16 accumulator, not a {} {} {}",
                        d.frag.name(),
                        d.frag.dtype(),
                        d.frag.role().name(),
                        d.frag.shape()
                    ));
                }
                if n % 8 != 0 || !(8..=256).contains(&n) || (n > ROW && n % ROW != 0) {
                    return Err(format!(
                        "wgmma: n = {n} must be a multiple of 8 up to 64, or of 64 up to 256"
                    ));
                }
                for (t, major, what) in [(a, Major::K, "A"), (b, Major::Mn, "B")] {
                    if t.major != major {
                        return Err(format!(
                            "wgmma: the {what} tile `{}` must be {}",
                            t.buffer.name(),
                            major.name()
                        ));
                    }
                    if t.buffer.dtype() != DType::F16 || t.buffer.scope() != Scope::Shared {
                        return Err(format!(
                            "wgmma: the {what} tile `{}` must be a shared f16 buffer, not {} {}",
                            t.buffer.name(),
                            t.buffer.scope().name(),
                            t.buffer.dtype()
                        ));
                    }
                }
                if n > ROW && b.box_elems < 16 * ROW {
                    return Err(format!(
                        "wgmma: the B tile `{}` has boxes {} elements apart, fewer than a 16-row box",
                        b.buffer.name(),
                        b.box_elems
                    ));
                }
                let _ = m;
                Ok(())
            }
            FragOp::Tma {
                dst,
                src,
                coords,
                rows,
                ..
            } => {
                if dst.scope() != Scope::Shared || src.scope() != Scope::Global {
                    return Err(format!(
                        "tma: copies a global tensor into shared memory, not `{}` ({}) into `{}` ({})",
                        src.name(),
                        src.scope().name(),
                        dst.name(),
                        dst.scope().name()
                    ));
                }
                if dst.dtype() != DType::F16 || src.dtype() != DType::F16 {
                    return Err(format!(
                        "tma: copies f16 tensors, not `{}` ({}) into `{}` ({})",
                        src.name(),
                        src.dtype(),
                        dst.name(),
                        dst.dtype()
                    ));
                }
                if coords.len() != src.ndim() || !(2..=3).contains(&src.ndim()) {
                    return Err(format!(
                        "tma: `{}` has {} dimensions and {} coordinates; copies take 2 or 3 of each",
                        src.name(),
                        src.ndim(),
                        coords.len()
                    ));
                }
                if !(1..=256).contains(rows) {
                    return Err(format!("tma: a box of {rows} rows; 1 to 256"));
                }
                Ok(())
            }
            FragOp::Fill { .. }
            | FragOp::WgFence
            | FragOp::WgCommit
            | FragOp::WgWait { .. }
            | FragOp::BarInit { .. }
            | FragOp::BarExpect { .. }
            | FragOp::BarWait { .. } => Ok(()),
        }
    }
}
