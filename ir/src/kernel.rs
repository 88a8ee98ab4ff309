//! The lowered, backend-neutral program: what emitters and the interpreter see.
//!
//! A [`LoweredFunc`] is a list of [`Kernel`]s launched in order over the function's
//! buffers (and any global temporaries). A kernel has a launch shape, shared and local
//! allocations, and a body made of a small statement set ([`KStmt`]) over [`Expr`]s with
//! these guarantees, which lowering establishes and emitters may rely on:
//!
//! - every [`Expr::Load`] and [`KStmt::Store`] has exactly one (flat) index, of type `i32`;
//! - there is no `Expr::Reduce`, no `FloorDiv`/`FloorMod` (lowering wrote them as `Div`/
//!   `Mod` on provably non-negative operands, or as an explicit floor form), and thread
//!   indices appear only as [`Expr::Builtin`];
//! - a store or load with `lanes > 1` is a contiguous access of `lanes` elements whose
//!   first index is a multiple of `lanes`; a vector store's value is a vector load of the
//!   same width (a copy);
//! - [`KStmt::Barrier`] appears only where every thread of the block reaches it;
//! - [`KStmt::Grid`]`(`[`GridControl::Wait`]`)` is an author's placement, checked by the
//!   emitters (at most one, at the top level of the body, after nothing but prefetches);
//! - [`KStmt::Mapping`] is *not* lowered: [`crate::lower`] expands every task mapping into
//!   loops. Emitters refuse one with a typed error.

use crate::dtype::DType;
use crate::expr::{Buffer, Expr, Intrinsic, Var};
use crate::fragment::{FragOp, Fragment};
/// Re-exported: kernel statements name it ([`KStmt::Grid`]).
pub use crate::func::GridControl;
use crate::func::{AtomicAdd, Param};
use crate::mapping::TaskMapping;

/// How a kernel uses a buffer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
    /// Read, and written by no kernel of the run the kernel belongs to (a model's
    /// weights): the one kind of buffer a kernel may load before its wait for the
    /// kernel launched before it ([`GridControl::Wait`]).
    Constant,
}

impl Access {
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite | Access::Constant)
    }
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelParam {
    /// A global buffer. Distinct buffer parameters never alias (`__restrict__` is valid).
    Buffer { buffer: Buffer, access: Access },
    /// A scalar passed by value.
    Scalar(Var),
}

impl KernelParam {
    pub fn name(&self) -> &str {
        match self {
            KernelParam::Buffer { buffer, .. } => buffer.name(),
            KernelParam::Scalar(v) => v.name(),
        }
    }
}

/// A task mapping that lowering has not expanded (see the module docs).
#[derive(Clone, Debug)]
pub struct KMapping {
    pub mapping: TaskMapping,
    pub worker: Expr,
    pub task_vars: Vec<Var>,
    pub body: KStmt,
}

/// A tensor map a launch passes by value for TMA copies from `buffer` in boxes of
/// `rows × 64` elements with the 128-byte swizzle ([`crate::tma`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorMap {
    pub buffer: Buffer,
    pub rows: u32,
}

/// A statement of a lowered kernel.
#[derive(Clone, Debug)]
pub enum KStmt {
    Seq(Vec<KStmt>),
    /// `for var in 0..extent`; `unroll` asks the emitter to unroll it fully.
    For {
        var: Var,
        extent: i64,
        unroll: bool,
        body: Box<KStmt>,
    },
    If {
        cond: Expr,
        then: Box<KStmt>,
        otherwise: Option<Box<KStmt>>,
    },
    /// `let var = value` in scope for `body`.
    Let {
        var: Var,
        value: Expr,
        body: Box<KStmt>,
    },
    /// `buffer[index .. index + lanes] = value`.
    Store {
        buffer: Buffer,
        index: Expr,
        value: Expr,
        lanes: u32,
    },
    /// Block-wide barrier for shared memory (`__syncthreads()`, `workgroupBarrier()`).
    Barrier,
    /// An unexpanded task mapping (never in a kernel that lowering returns).
    Mapping(Box<KMapping>),
    /// A note for readers of the emitted source: the block the following statements
    /// came from. No effect on execution.
    Comment(String),
    /// A warp-wide matrix-fragment operation (see [`crate::fragment`]); its `origin` is
    /// one flat index.
    Frag(Box<FragOp>),
    /// A device-scope memory fence ([`crate::func::Stmt::Fence`]).
    Fence,
    /// An atomic fetch-add ([`crate::func::Stmt::AtomicAdd`]); each of its index lists
    /// is one flat index.
    AtomicAdd(Box<AtomicAdd>),
    /// A hint that `buffer[index]` (global) will be read soon
    /// ([`crate::func::Stmt::Prefetch`]); `index` is one flat index, like a store's.
    /// `bytes` 0: the line holding it; more (a multiple of 16, `index` 16-byte aligned):
    /// the `bytes` from it on, as one bulk request where the target has one (CUDA
    /// sm_90's `cp.async.bulk.prefetch.L2`), else the line holding the first.
    Prefetch {
        buffer: Buffer,
        index: Expr,
        bytes: u32,
    },
    /// A programmatic-dependent-launch instruction ([`GridControl`]). An emitter that
    /// finds a [`GridControl::Wait`] waits there instead of at the top of the kernel.
    Grid(GridControl),
}

impl KStmt {
    /// A sequence, flattened (nested sequences spliced, a single item returned alone).
    pub fn seq(items: Vec<KStmt>) -> KStmt {
        let mut flat = Vec::new();
        for s in items {
            match s {
                KStmt::Seq(inner) => flat.extend(inner),
                s => flat.push(s),
            }
        }
        if flat.len() == 1 {
            flat.pop().unwrap_or(KStmt::Seq(Vec::new()))
        } else {
            KStmt::Seq(flat)
        }
    }

    /// Calls `f` on this statement and every statement below it, parents first.
    pub fn visit(&self, f: &mut dyn FnMut(&KStmt)) {
        f(self);
        match self {
            KStmt::Seq(items) => items.iter().for_each(|s| s.visit(f)),
            KStmt::For { body, .. } | KStmt::Let { body, .. } => body.visit(f),
            KStmt::If {
                then, otherwise, ..
            } => {
                then.visit(f);
                if let Some(o) = otherwise {
                    o.visit(f);
                }
            }
            KStmt::Mapping(m) => m.body.visit(f),
            KStmt::Store { .. }
            | KStmt::Barrier
            | KStmt::Comment(_)
            | KStmt::Frag(_)
            | KStmt::Fence
            | KStmt::AtomicAdd(_)
            | KStmt::Prefetch { .. }
            | KStmt::Grid(_) => {}
        }
    }

    /// Calls `f` on every top-level expression (conditions, let values, store indices
    /// and values, mapping workers).
    pub fn visit_exprs(&self, f: &mut dyn FnMut(&Expr)) {
        self.visit(&mut |s| match s {
            KStmt::If { cond, .. } => f(cond),
            KStmt::Let { value, .. } => f(value),
            KStmt::Store { index, value, .. } => {
                f(index);
                f(value);
            }
            KStmt::Mapping(m) => f(&m.worker),
            KStmt::Frag(op) => op.exprs().into_iter().for_each(&mut *f),
            KStmt::AtomicAdd(a) => a.exprs().for_each(&mut *f),
            KStmt::Prefetch { index, .. } => f(index),
            KStmt::Seq(_)
            | KStmt::For { .. }
            | KStmt::Barrier
            | KStmt::Comment(_)
            | KStmt::Fence
            | KStmt::Grid(_) => {}
        })
    }

    /// Rebuilds the statement bottom-up through `f`: `f` sees each statement after the
    /// statements below it were rebuilt, and may replace it (drop an `if` for its `then`,
    /// filter a sequence, ...).
    pub fn rewrite(&self, f: &mut dyn FnMut(KStmt) -> KStmt) -> KStmt {
        let node = match self {
            KStmt::Seq(items) => KStmt::Seq(items.iter().map(|s| s.rewrite(f)).collect()),
            KStmt::For {
                var,
                extent,
                unroll,
                body,
            } => KStmt::For {
                var: var.clone(),
                extent: *extent,
                unroll: *unroll,
                body: Box::new(body.rewrite(f)),
            },
            KStmt::If {
                cond,
                then,
                otherwise,
            } => KStmt::If {
                cond: cond.clone(),
                then: Box::new(then.rewrite(f)),
                otherwise: otherwise.as_ref().map(|o| Box::new(o.rewrite(f))),
            },
            KStmt::Let { var, value, body } => KStmt::Let {
                var: var.clone(),
                value: value.clone(),
                body: Box::new(body.rewrite(f)),
            },
            KStmt::Mapping(m) => KStmt::Mapping(Box::new(KMapping {
                mapping: m.mapping.clone(),
                worker: m.worker.clone(),
                task_vars: m.task_vars.clone(),
                body: m.body.rewrite(f),
            })),
            other => other.clone(),
        };
        f(node)
    }

    /// The statement without the [`KStmt::Grid`] instructions `drop` picks (each becomes
    /// an empty sequence, spliced out of its own): for passes that move the body under
    /// a condition, where a wait may not stand ([`GridControl::Wait`]), so that the
    /// kernel waits at its top again.
    pub fn without_grid(&self, drop: &dyn Fn(GridControl) -> bool) -> KStmt {
        let mut any = false;
        self.visit(&mut |s| any |= matches!(s, KStmt::Grid(g) if drop(*g)));
        if !any {
            return self.clone();
        }
        self.rewrite(&mut |s| match s {
            KStmt::Grid(g) if drop(g) => KStmt::Seq(Vec::new()),
            KStmt::Seq(items) => KStmt::seq(items),
            other => other,
        })
    }

    /// Rebuilds the statement with every top-level expression passed through `f`.
    pub fn map_exprs(&self, f: &mut dyn FnMut(&Expr) -> Expr) -> KStmt {
        match self {
            KStmt::Seq(items) => KStmt::Seq(items.iter().map(|s| s.map_exprs(f)).collect()),
            KStmt::For {
                var,
                extent,
                unroll,
                body,
            } => KStmt::For {
                var: var.clone(),
                extent: *extent,
                unroll: *unroll,
                body: Box::new(body.map_exprs(f)),
            },
            KStmt::If {
                cond,
                then,
                otherwise,
            } => KStmt::If {
                cond: f(cond),
                then: Box::new(then.map_exprs(f)),
                otherwise: otherwise.as_ref().map(|o| Box::new(o.map_exprs(f))),
            },
            KStmt::Let { var, value, body } => KStmt::Let {
                var: var.clone(),
                value: f(value),
                body: Box::new(body.map_exprs(f)),
            },
            KStmt::Store {
                buffer,
                index,
                value,
                lanes,
            } => KStmt::Store {
                buffer: buffer.clone(),
                index: f(index),
                value: f(value),
                lanes: *lanes,
            },
            KStmt::Barrier => KStmt::Barrier,
            KStmt::Fence => KStmt::Fence,
            KStmt::AtomicAdd(a) => KStmt::AtomicAdd(Box::new(a.map_exprs(f))),
            KStmt::Prefetch {
                buffer,
                index,
                bytes,
            } => KStmt::Prefetch {
                buffer: buffer.clone(),
                index: f(index),
                bytes: *bytes,
            },
            KStmt::Grid(g) => KStmt::Grid(*g),
            KStmt::Comment(t) => KStmt::Comment(t.clone()),
            KStmt::Frag(op) => KStmt::Frag(Box::new(op.map_exprs(f))),
            KStmt::Mapping(m) => KStmt::Mapping(Box::new(KMapping {
                mapping: m.mapping.clone(),
                worker: f(&m.worker),
                task_vars: m.task_vars.clone(),
                body: m.body.map_exprs(f),
            })),
        }
    }
}

/// One GPU kernel launch. Its `Display` ([`crate::printer`]) prints it alone, with its
/// parameters.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// A C identifier, unique within its [`LoweredFunc`].
    pub name: String,
    pub params: Vec<KernelParam>,
    /// Blocks per grid, x/y/z.
    pub grid: [u32; 3],
    /// Threads per block, x/y/z.
    pub block: [u32; 3],
    /// Shared-memory arrays (one-dimensional: indices are flat).
    pub shared: Vec<Buffer>,
    /// Per-thread arrays (one-dimensional).
    pub locals: Vec<Buffer>,
    pub body: KStmt,
    /// Blocks per multiprocessor the CUDA compiler should leave room for: it writes
    /// `__launch_bounds__(threads, n)`, which caps registers per thread at about
    /// 65536 / (threads · n). 0: no request. WGSL and MSL have no such control.
    pub min_blocks_per_sm: u32,
    /// The kernel's copies of global memory into shared memory (vector stores whose value
    /// is a load) may complete asynchronously, at the thread's next barrier: CUDA sm_80+
    /// emits them as `cp.async` and waits for them before each `__syncthreads()`; other
    /// targets copy synchronously, which is the same result. A kernel that sets it reads
    /// such a destination only after a barrier (templates that double-buffer through
    /// shared memory already do).
    pub async_copies: bool,
    /// With `async_copies`, how many of the thread's previous barriers' groups of copies
    /// may still be in flight at a barrier: 0 waits for every copy (a double buffer);
    /// `stages - 2` for a pipeline of `stages` shared buffers, which then reads a
    /// destination only `async_pending + 1` barriers after the copy into it. CUDA commits
    /// the copies issued since the last barrier as one group and waits for all but the
    /// newest `async_pending` (`cp.async.commit_group`, `cp.async.wait_group`).
    pub async_pending: u32,
    /// Matrix-fragment arrays (one per warp; see [`crate::fragment`]).
    pub fragments: Vec<Fragment>,
}

impl Kernel {
    /// Threads per block.
    pub fn threads_per_block(&self) -> u64 {
        self.block.iter().map(|&b| b as u64).product()
    }

    /// Bytes of shared memory per block.
    pub fn shared_bytes(&self) -> u64 {
        self.shared.iter().map(|b| b.bytes() as u64).sum()
    }

    /// True if any parameter, allocation or expression uses `dtype`.
    pub fn uses_dtype(&self, dtype: DType) -> bool {
        let in_bufs = self.params.iter().any(|p| {
            matches!(p, KernelParam::Buffer { buffer, .. } if buffer.dtype() == dtype)
                || matches!(p, KernelParam::Scalar(v) if v.dtype() == dtype)
        }) || self
            .shared
            .iter()
            .chain(&self.locals)
            .any(|b| b.dtype() == dtype)
            || self.fragments.iter().any(|f| f.dtype() == dtype);
        let mut in_exprs = false;
        self.body.visit_exprs(&mut |e| {
            e.visit(&mut |e| {
                in_exprs |= e.dtype() == dtype;
            })
        });
        in_bufs || in_exprs
    }

    /// True if any expression calls `f` (an emitter includes the helper it needs).
    pub fn uses_intrinsic(&self, f: Intrinsic) -> bool {
        let mut found = false;
        self.body.visit_exprs(&mut |e| {
            e.visit(&mut |e| found |= matches!(e, Expr::Call(g, _) if *g == f))
        });
        found
    }

    /// True if the kernel uses matrix fragments (needs a backend's matrix units).
    pub fn uses_fragments(&self) -> bool {
        !self.fragments.is_empty()
    }

    /// The tensor maps a launch builds for the kernel's TMA copies, in the order the
    /// emitted kernel takes them after its other parameters: one per source buffer and
    /// box height ([`crate::tma`]).
    pub fn tensor_maps(&self) -> Vec<TensorMap> {
        let mut out: Vec<TensorMap> = Vec::new();
        self.body.visit(&mut |s| {
            if let KStmt::Frag(op) = s
                && let crate::fragment::FragOp::Tma { src, rows, .. } = op.as_ref()
            {
                let map = TensorMap {
                    buffer: src.clone(),
                    rows: *rows,
                };
                if !out.contains(&map) {
                    out.push(map);
                }
            }
        });
        out
    }

    /// The mbarrier arrays the kernel's operations name, in first-use order.
    pub fn mbarriers(&self) -> Vec<crate::tma::MBarrier> {
        let mut out: Vec<crate::tma::MBarrier> = Vec::new();
        self.body.visit(&mut |s| {
            if let KStmt::Frag(op) = s
                && let Some(b) = op.mbarrier()
                && !out.contains(&b.bar)
            {
                out.push(b.bar.clone());
            }
        });
        out
    }

    /// The widths `n` of the kernel's warpgroup MMAs (`wgmma.m64nNk16`), sorted.
    pub fn wgmma_widths(&self) -> Vec<u32> {
        let mut out: Vec<u32> = self
            .fragments
            .iter()
            .filter(|f| f.is_warpgroup())
            .map(|f| f.shape().n)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether the kernel uses Hopper's asynchronous operations (TMA, mbarriers,
    /// `wgmma`): it needs `sm_90a`.
    pub fn uses_hopper(&self) -> bool {
        let mut any = false;
        self.body.visit(&mut |s| {
            if let KStmt::Frag(op) = s {
                any |= op.threads() != crate::fragment::WARP;
            }
        });
        any
    }

    /// Whether the body holds a [`GridControl::Wait`]: an emitter waits for the previous
    /// kernel there instead of at the top of the body.
    pub fn waits_explicitly(&self) -> bool {
        self.uses_grid(GridControl::Wait)
    }

    /// Whether the body holds the programmatic-dependent-launch instruction `g`.
    pub fn uses_grid(&self, g: GridControl) -> bool {
        let mut any = false;
        self.body
            .visit(&mut |s| any |= matches!(s, KStmt::Grid(h) if *h == g));
        any
    }

    /// Whether the body prefetches (an emitter includes the helper it needs).
    pub fn uses_prefetch(&self) -> bool {
        let mut any = false;
        self.body
            .visit(&mut |s| any |= matches!(s, KStmt::Prefetch { .. }));
        any
    }

    /// The buffer parameters, in order.
    pub fn buffer_params(&self) -> impl Iterator<Item = (&Buffer, Access)> {
        self.params.iter().filter_map(|p| match p {
            KernelParam::Buffer { buffer, access } => Some((buffer, *access)),
            KernelParam::Scalar(_) => None,
        })
    }
}

/// A lowered function: kernels launched in order. Its `Display` ([`crate::printer`])
/// prints it as lowered TIR.
#[derive(Clone, Debug)]
pub struct LoweredFunc {
    pub name: String,
    /// The function's parameters, in call order.
    pub params: Vec<Param>,
    /// Global intermediate buffers the runtime allocates before the first kernel.
    pub temps: Vec<Buffer>,
    pub kernels: Vec<Kernel>,
}

impl LoweredFunc {
    /// The temporaries some kernel adds to atomically (counters): the runtime zeroes
    /// them once, when it allocates them, and never poisons them, since the kernels
    /// that count in them leave them at zero again (a replay finds them zeroed).
    pub fn counters(&self) -> Vec<&Buffer> {
        let mut targets: Vec<u64> = Vec::new();
        for k in &self.kernels {
            k.body.visit(&mut |s| {
                if let KStmt::AtomicAdd(a) = s {
                    targets.push(a.buffer.id());
                }
            });
        }
        self.temps
            .iter()
            .filter(|t| targets.contains(&t.id()))
            .collect()
    }
}
