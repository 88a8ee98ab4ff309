//! The Func IR: a TensorIR-like program of loops and blocks, the object every schedule
//! primitive transforms.
//!
//! A [`Func`] has buffer and scalar parameters, root-level allocations (intermediate
//! tensors, cache buffers) and a body. Loops run from 0 to a constant extent and have a
//! [`ForKind`]. A [`Block`] is one computation with spatial and reduce iteration
//! variables, an optional init, and a body of stores; a [`BlockRealize`] binds its
//! iteration variables to expressions of the enclosing loop variables and guards it with
//! a predicate (`T.where`). Inside a block only block variables are used, outside only
//! loop variables: this is what lets primitives move loops without touching block bodies.

use crate::expr::{Buffer, Expr, ThreadAxis, Var, fresh_id};
use crate::fragment::FragOp;
use crate::mapping::TaskMapping;

/// A parameter of a [`Func`] or a lowered function.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    Buffer(Buffer),
    Scalar(Var),
}

impl Param {
    pub fn name(&self) -> &str {
        match self {
            Param::Buffer(b) => b.name(),
            Param::Scalar(v) => v.name(),
        }
    }
}

impl From<Buffer> for Param {
    fn from(b: Buffer) -> Param {
        Param::Buffer(b)
    }
}
impl From<&Buffer> for Param {
    fn from(b: &Buffer) -> Param {
        Param::Buffer(b.clone())
    }
}
impl From<Var> for Param {
    fn from(v: Var) -> Param {
        Param::Scalar(v)
    }
}
impl From<&Var> for Param {
    fn from(v: &Var) -> Param {
        Param::Scalar(v.clone())
    }
}

/// A function: the unit that is scheduled and lowered. Its `Display` ([`crate::printer`])
/// prints it as TVMScript.
#[derive(Clone, Debug)]
pub struct Func {
    pub name: String,
    pub params: Vec<Param>,
    /// Buffers allocated at the root (`T.alloc_buffer`): intermediate tensors and caches.
    pub allocs: Vec<Buffer>,
    pub body: Stmt,
    /// Hints for the kernels, by root-level statement (one kernel each); a kernel past the
    /// end of the list has none. Templates set them; schedules do not.
    pub kernel_hints: Vec<KernelHints>,
}

/// What a kernel may ask of a backend's compiler without changing what it computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelHints {
    /// See [`crate::kernel::Kernel::min_blocks_per_sm`].
    pub min_blocks_per_sm: u32,
    /// See [`crate::kernel::Kernel::async_copies`].
    pub async_copies: bool,
    /// See [`crate::kernel::Kernel::async_pending`].
    pub async_pending: u32,
}

impl Func {
    /// The buffer parameters, in order.
    pub fn buffer_params(&self) -> impl Iterator<Item = &Buffer> {
        self.params.iter().filter_map(|p| match p {
            Param::Buffer(b) => Some(b),
            Param::Scalar(_) => None,
        })
    }

    /// True if `b` is a parameter (an input or output of the function).
    pub fn is_param(&self, b: &Buffer) -> bool {
        self.buffer_params().any(|p| p == b)
    }
}

/// How a loop runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForKind {
    Serial,
    /// Fully unrolled by the emitter (CUDA `#pragma unroll`, WGSL: copies of the body).
    Unrolled,
    /// Vector lanes; aligned, contiguous copies become `float4`/`vec4` accesses.
    Vectorized,
    /// Bound to a GPU index: one iteration per thread or block.
    Bound(ThreadAxis),
}

/// `for var in range(extent)`.
#[derive(Clone, Debug)]
pub struct For {
    pub var: Var,
    pub extent: i64,
    pub kind: ForKind,
    pub body: Stmt,
}

/// Whether a block iteration variable is data-parallel or reduced over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IterKind {
    Spatial,
    Reduce,
}

/// A block iteration variable with its domain `0..extent`.
#[derive(Clone, Debug)]
pub struct BlockVar {
    pub var: Var,
    pub extent: i64,
    pub kind: IterKind,
}

/// Identity of a block, stable across the primitives that rename it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u64);

impl BlockId {
    pub fn fresh() -> BlockId {
        BlockId(fresh_id())
    }
}

/// One computation: `with T.block(name)`.
#[derive(Clone, Debug)]
pub struct Block {
    pub id: BlockId,
    pub name: String,
    pub iter_vars: Vec<BlockVar>,
    /// Runs once per spatial point before the first reduction step (`T.init()`).
    pub init: Option<Stmt>,
    pub body: Stmt,
}

impl Block {
    /// True if the block has reduce iteration variables.
    pub fn is_reduction(&self) -> bool {
        self.iter_vars.iter().any(|v| v.kind == IterKind::Reduce)
    }

    /// The buffers this block writes, in order of first store.
    pub fn writes(&self) -> Vec<Buffer> {
        let mut out: Vec<Buffer> = Vec::new();
        let mut add = |s: &Stmt| {
            s.visit(&mut |s| {
                if let Stmt::Store { buffer, .. } = s
                    && !out.contains(buffer)
                {
                    out.push(buffer.clone());
                }
            })
        };
        if let Some(init) = &self.init {
            add(init);
        }
        add(&self.body);
        out
    }

    /// The buffers this block reads, in order of first load. A reduction block with an
    /// init does not count its own accumulator (as in TensorIR), so the read indices of
    /// `C[i, j] += A[i, k] * B[k, j]` are 0 for `A` and 1 for `B`.
    pub fn reads(&self) -> Vec<Buffer> {
        let writes = self.writes();
        let mut out: Vec<Buffer> = Vec::new();
        self.body.visit_exprs(&mut |e| {
            for (b, _) in e.loads() {
                let skip = self.init.is_some() && writes.contains(b);
                if !skip && !out.contains(b) {
                    out.push(b.clone());
                }
            }
        });
        out
    }

    /// Every access (buffer, indices, is_write) in the block body and init.
    pub fn accesses(&self) -> Vec<(Buffer, Vec<Expr>, bool)> {
        let mut out = Vec::new();
        let mut collect = |s: &Stmt| {
            s.visit(&mut |s| {
                if let Stmt::Store {
                    buffer, indices, ..
                } = s
                {
                    out.push((buffer.clone(), indices.clone(), true));
                }
            });
            s.visit_exprs(&mut |e| {
                for (b, idx) in e.loads() {
                    out.push((b.clone(), idx.to_vec(), false));
                }
            });
        };
        if let Some(init) = &self.init {
            collect(init);
        }
        collect(&self.body);
        out
    }
}

/// A block with its iteration variables bound to loop expressions.
#[derive(Clone, Debug)]
pub struct BlockRealize {
    /// One expression per iteration variable, over enclosing loop variables.
    pub bindings: Vec<Expr>,
    /// `T.where(...)`: the block runs only where this holds.
    pub predicate: Expr,
    pub block: Block,
}

/// A task mapping applied to a worker index: `for t0, t1 in mapping.on(worker)`.
/// Lowering expands it into ordinary loops (see [`crate::mapping`]).
#[derive(Clone, Debug)]
pub struct MappingLoop {
    pub mapping: TaskMapping,
    pub worker: Expr,
    /// One variable per task dimension.
    pub task_vars: Vec<Var>,
    pub body: Stmt,
}

/// A statement of the Func IR.
#[derive(Clone, Debug)]
pub enum Stmt {
    Seq(Vec<Stmt>),
    For(Box<For>),
    Block(Box<BlockRealize>),
    Store {
        buffer: Buffer,
        indices: Vec<Expr>,
        value: Expr,
    },
    If {
        cond: Expr,
        then: Box<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    Mapping(Box<MappingLoop>),
    /// `let var = value` in scope for `body` (templates name index arithmetic once).
    Let {
        var: Var,
        value: Expr,
        body: Box<Stmt>,
    },
    /// A block-wide barrier placed by the author of a template. A kernel that holds one
    /// is left as written: lowering inserts no barriers of its own there, and the
    /// interpreter's race check verifies the author's.
    Barrier,
    /// A warp-wide matrix-fragment operation (see [`crate::fragment`]).
    Frag(Box<FragOp>),
    /// A device-scope memory fence (CUDA's `__threadfence()`): the thread's writes
    /// before it reach every block before its writes after it (an atomic among them),
    /// and its reads after it see what the blocks whose atomics it observed wrote before
    /// their own fence. What a block that publishes partial results to another block,
    /// through an [`AtomicAdd`] on a counter, needs on both sides.
    Fence,
    /// An atomic fetch-add on one element of a global 32-bit integer buffer.
    AtomicAdd(Box<AtomicAdd>),
    /// A hint that this element of a global (parameter or temporary) buffer will be
    /// read soon; no effect on any value. CUDA brings the line holding it into L2, other
    /// targets emit nothing. What a kernel places before its [`GridControl::Wait`] for
    /// data its predecessor does not write (weights), so the loads overlap the wait.
    Prefetch {
        buffer: Buffer,
        indices: Vec<Expr>,
    },
    /// One of programmatic dependent launch's instructions (see [`GridControl`]).
    Grid(GridControl),
}

/// Programmatic dependent launch's two instructions (CUDA on sm_90 and later; other
/// targets have none and emit nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridControl {
    /// Wait until the kernel launched before this one has finished and its writes are
    /// visible (`griddepcontrol.wait`).
    Wait,
    /// Let the next kernel launch now, its blocks placed as resources free up; it still
    /// waits for this one at its own Wait (`griddepcontrol.launch_dependents`).
    LaunchDependents,
}

/// `old[old_indices] = atomic_add(&buffer[indices], value)`: the element of `buffer`
/// (global, `i32` or `u32`) gains `value` as one indivisible step against every other
/// thread of every block, and the value it held before goes to `old` (a shared or
/// local element, so that a block can broadcast it after a barrier), or nowhere.
#[derive(Clone, Debug)]
pub struct AtomicAdd {
    pub buffer: Buffer,
    pub indices: Vec<Expr>,
    pub value: Expr,
    pub old: Option<(Buffer, Vec<Expr>)>,
}

impl AtomicAdd {
    /// Every expression: the indices, the value, then the old value's indices.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        let old = self.old.iter().flat_map(|(_, i)| i);
        self.indices.iter().chain([&self.value]).chain(old)
    }

    /// The same with every expression rewritten by `f`.
    pub fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> AtomicAdd {
        AtomicAdd {
            buffer: self.buffer.clone(),
            indices: self.indices.iter().map(&mut *f).collect(),
            value: f(&self.value),
            old: self
                .old
                .as_ref()
                .map(|(b, i)| (b.clone(), i.iter().map(&mut *f).collect())),
        }
    }
}

/// A position in a statement tree: the child index taken at each level (see
/// [`Stmt::children`]).
pub type Path = Vec<usize>;

impl Stmt {
    /// The direct children, in order: a loop's body, a sequence's items, a block's init
    /// and body, an if's branches, a mapping's body.
    pub fn children(&self) -> Vec<&Stmt> {
        match self {
            Stmt::Seq(items) => items.iter().collect(),
            Stmt::For(f) => vec![&f.body],
            Stmt::Block(r) => r.block.init.iter().chain([&r.block.body]).collect(),
            Stmt::If {
                then, otherwise, ..
            } => std::iter::once(then.as_ref())
                .chain(otherwise.as_deref())
                .collect(),
            Stmt::Mapping(m) => vec![&m.body],
            Stmt::Let { body, .. } => vec![body],
            Stmt::Store { .. }
            | Stmt::Barrier
            | Stmt::Frag(_)
            | Stmt::Fence
            | Stmt::AtomicAdd(_)
            | Stmt::Prefetch { .. }
            | Stmt::Grid(_) => vec![],
        }
    }

    /// Mutable access to child `i` (same numbering as [`Stmt::children`]).
    pub fn child_mut(&mut self, i: usize) -> Option<&mut Stmt> {
        match self {
            Stmt::Seq(items) => items.get_mut(i),
            Stmt::For(f) => (i == 0).then_some(&mut f.body),
            Stmt::Block(r) => {
                let has_init = r.block.init.is_some();
                match (i, has_init) {
                    (0, true) => r.block.init.as_mut(),
                    (1, true) | (0, false) => Some(&mut r.block.body),
                    _ => None,
                }
            }
            Stmt::If {
                then, otherwise, ..
            } => match i {
                0 => Some(then),
                1 => otherwise.as_deref_mut(),
                _ => None,
            },
            Stmt::Mapping(m) => (i == 0).then_some(&mut m.body),
            Stmt::Let { body, .. } => (i == 0).then_some(&mut **body),
            Stmt::Store { .. }
            | Stmt::Barrier
            | Stmt::Frag(_)
            | Stmt::Fence
            | Stmt::AtomicAdd(_)
            | Stmt::Prefetch { .. }
            | Stmt::Grid(_) => None,
        }
    }

    /// The statement at `path`.
    pub fn at(&self, path: &[usize]) -> Option<&Stmt> {
        let mut s = self;
        for &i in path {
            s = *s.children().get(i)?;
        }
        Some(s)
    }

    /// The statement at `path`, mutably.
    pub fn at_mut(&mut self, path: &[usize]) -> Option<&mut Stmt> {
        let mut s = self;
        for &i in path {
            s = s.child_mut(i)?;
        }
        Some(s)
    }

    /// Calls `f` on this statement and every statement below it, parents first.
    pub fn visit(&self, f: &mut dyn FnMut(&Stmt)) {
        f(self);
        for c in self.children() {
            c.visit(f);
        }
    }

    /// Calls `f` on every statement with its path (relative to `self`), parents first.
    pub fn visit_paths(&self, f: &mut dyn FnMut(&Path, &Stmt)) {
        fn go(s: &Stmt, path: &mut Path, f: &mut dyn FnMut(&Path, &Stmt)) {
            f(path, s);
            for (i, c) in s.children().into_iter().enumerate() {
                path.push(i);
                go(c, path, f);
                path.pop();
            }
        }
        go(self, &mut Vec::new(), f)
    }

    /// Calls `f` on every top-level expression of every statement (store indices and
    /// values, conditions, bindings, predicates, workers).
    pub fn visit_exprs(&self, f: &mut dyn FnMut(&Expr)) {
        self.visit(&mut |s| match s {
            Stmt::Store { indices, value, .. } => {
                indices.iter().for_each(&mut *f);
                f(value);
            }
            Stmt::If { cond, .. } => f(cond),
            Stmt::Block(r) => {
                r.bindings.iter().for_each(&mut *f);
                f(&r.predicate);
            }
            Stmt::Mapping(m) => f(&m.worker),
            Stmt::Let { value, .. } => f(value),
            Stmt::Frag(op) => op.exprs().into_iter().for_each(&mut *f),
            Stmt::AtomicAdd(a) => a.exprs().for_each(&mut *f),
            Stmt::Prefetch { indices, .. } => indices.iter().for_each(&mut *f),
            Stmt::Seq(_) | Stmt::For(_) | Stmt::Barrier | Stmt::Fence | Stmt::Grid(_) => {}
        })
    }

    /// Rewrites every expression outside block bodies: bindings, predicates, conditions
    /// of ifs and workers of mappings (what loop transformations change).
    pub fn rewrite_loop_exprs(&mut self, f: &mut dyn FnMut(&Expr) -> Expr) {
        match self {
            Stmt::Seq(items) => items.iter_mut().for_each(|s| s.rewrite_loop_exprs(f)),
            Stmt::For(l) => l.body.rewrite_loop_exprs(f),
            Stmt::Block(r) => {
                r.bindings = r.bindings.iter().map(&mut *f).collect();
                r.predicate = f(&r.predicate);
            }
            Stmt::Store { .. } => {}
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                *cond = f(cond);
                then.rewrite_loop_exprs(f);
                if let Some(o) = otherwise {
                    o.rewrite_loop_exprs(f);
                }
            }
            Stmt::Mapping(m) => {
                m.worker = f(&m.worker);
                m.body.rewrite_loop_exprs(f);
            }
            Stmt::Let { value, body, .. } => {
                *value = f(value);
                body.rewrite_loop_exprs(f);
            }
            Stmt::Barrier
            | Stmt::Frag(_)
            | Stmt::Fence
            | Stmt::AtomicAdd(_)
            | Stmt::Prefetch { .. }
            | Stmt::Grid(_) => {}
        }
    }

    /// Rewrites every expression in stores and conditions (block bodies), leaving
    /// bindings alone.
    pub fn rewrite_body_exprs(&mut self, f: &mut dyn FnMut(&Expr) -> Expr) {
        match self {
            Stmt::Seq(items) => items.iter_mut().for_each(|s| s.rewrite_body_exprs(f)),
            Stmt::For(l) => l.body.rewrite_body_exprs(f),
            Stmt::Block(r) => {
                if let Some(init) = &mut r.block.init {
                    init.rewrite_body_exprs(f);
                }
                r.block.body.rewrite_body_exprs(f);
            }
            Stmt::Store { indices, value, .. } => {
                *indices = indices.iter().map(&mut *f).collect();
                *value = f(value);
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                *cond = f(cond);
                then.rewrite_body_exprs(f);
                if let Some(o) = otherwise {
                    o.rewrite_body_exprs(f);
                }
            }
            Stmt::Mapping(m) => m.body.rewrite_body_exprs(f),
            Stmt::Let { body, .. } => body.rewrite_body_exprs(f),
            Stmt::Barrier | Stmt::Fence | Stmt::Grid(_) => {}
            Stmt::Frag(op) => **op = op.map_exprs(f),
            Stmt::AtomicAdd(a) => **a = a.map_exprs(f),
            Stmt::Prefetch { indices, .. } => *indices = indices.iter().map(&mut *f).collect(),
        }
    }

    /// Every buffer this statement (and everything below it) loads or stores, in order
    /// of first access.
    pub fn buffers(&self) -> Vec<Buffer> {
        let mut out: Vec<Buffer> = Vec::new();
        let mut add = |b: &Buffer| {
            if !out.contains(b) {
                out.push(b.clone());
            }
        };
        self.visit(&mut |s| match s {
            Stmt::Store { buffer, .. } => add(buffer),
            Stmt::Frag(op) => {
                for (b, _, _) in op.accesses() {
                    add(b)
                }
                if let Some(b) = op.tma_source() {
                    add(b)
                }
            }
            Stmt::AtomicAdd(a) => {
                add(&a.buffer);
                if let Some((b, _)) = &a.old {
                    add(b)
                }
            }
            // A prefetched buffer is read (a parameter of the kernel).
            Stmt::Prefetch { buffer, .. } => add(buffer),
            _ => {}
        });
        self.visit_exprs(&mut |e| e.loads().into_iter().for_each(|(b, _)| add(b)));
        out
    }

    /// The realizes of every block at or below this statement, in program order.
    pub fn blocks(&self) -> Vec<&BlockRealize> {
        fn go<'a>(s: &'a Stmt, out: &mut Vec<&'a BlockRealize>) {
            if let Stmt::Block(r) = s {
                out.push(r.as_ref());
            }
            for c in s.children() {
                go(c, out);
            }
        }
        let mut out = Vec::new();
        go(self, &mut out);
        out
    }

    /// A sequence, flattened: nested sequences are spliced in and a single item is
    /// returned alone.
    pub fn seq(items: Vec<Stmt>) -> Stmt {
        let mut flat = Vec::new();
        for s in items {
            match s {
                Stmt::Seq(inner) => flat.extend(inner),
                s => flat.push(s),
            }
        }
        if flat.len() == 1 {
            flat.pop().unwrap_or(Stmt::Seq(Vec::new()))
        } else {
            Stmt::Seq(flat)
        }
    }

    /// The items of this statement seen as a sequence.
    pub fn items(&self) -> &[Stmt] {
        match self {
            Stmt::Seq(items) => items,
            s => std::slice::from_ref(s),
        }
    }

    /// Removes and returns the statement at `path` (which must be inside a sequence, or
    /// be the only body of its parent, which then becomes an empty sequence).
    pub fn remove_at(&mut self, path: &[usize]) -> Option<Stmt> {
        let (last, parent) = path.split_last()?;
        let parent = self.at_mut(parent)?;
        match parent {
            Stmt::Seq(items) if *last < items.len() => Some(items.remove(*last)),
            other => {
                let child = other.child_mut(*last)?;
                Some(std::mem::replace(child, Stmt::Seq(Vec::new())))
            }
        }
    }
}

impl For {
    /// `for var in range(extent)` with a serial kind.
    pub fn serial(var: Var, extent: i64, body: Stmt) -> Stmt {
        Stmt::For(Box::new(For {
            var,
            extent,
            kind: ForKind::Serial,
            body,
        }))
    }
}
