//! Compiles a [`Kernel`] into the compact form the executor runs.
//!
//! Every expression node gets a fixed location: a *uniform* slot when its value is the
//! same for every thread (constants, loop variables, scalar parameters and arithmetic on
//! them), or a *column* (one value per thread) otherwise. Block indices are columns too,
//! as the executor runs several small blocks side by side.
//! Loop variables are uniform because loop extents are constants and active threads run
//! in lockstep. A `let` binds its variable to the location of its value, so lets cost
//! nothing at run time. Columns are numbered in post-order, so an operation's operands
//! always have lower column numbers than its result (the executor relies on that to
//! borrow them side by side). Types are checked here, and each operation is resolved to
//! a function of its operand type, so the executor never dispatches on dtypes.

use std::collections::HashMap;

use super::error::{InterpError, MemOp};
use super::fragment::CFrag;
use super::node::NodeId;
use super::value::{self, BinFn, CallFn, Raw, UnFn};
use crate::dtype::DType;
use crate::expr::{BinOp, Buffer, Expr, Intrinsic, Scope, Var};
use crate::fragment::{Fragment, WARP};
use crate::func::AtomicAdd;
use crate::kernel::{Access, KStmt, Kernel, KernelParam};
use crate::tma::MBarrier;

#[path = "frag_compile.rs"]
mod frag_compile;

/// Where a node's value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loc {
    /// One value for the whole block.
    Uni(u32),
    /// One value per thread.
    Col(u32),
}

/// What computes a node's value.
pub(super) enum Op {
    /// A constant, variable or builtin: the value is already at the node's location.
    Leaf,
    Bin(BinFn, NodeId, NodeId),
    /// `a && b`, `b` evaluated only where `a` holds (as C's `&&`, so it can guard loads).
    And(NodeId, NodeId),
    /// `a || b`, `b` evaluated only where `a` does not hold.
    Or(NodeId, NodeId),
    Un(UnFn, NodeId),
    Cast(DType, DType, NodeId),
    /// `c ? t : f`, each branch evaluated only for the threads that take it.
    Select(NodeId, NodeId, NodeId),
    Call(CallFn, [NodeId; 3], usize),
    /// `shuffle_xor(value, mask)`: the value at the lane whose thread index in the block
    /// is this one's xor `mask` (a subgroup collective, [`crate::expr::Intrinsic`]).
    Shuffle(NodeId, u32),
    Load {
        buf: u32,
        idx: NodeId,
        /// The index is `i32` (else `u32`).
        signed: bool,
        /// A bool buffer: loaded bits are normalised to 0/1.
        as_bool: bool,
    },
}

/// One expression node.
pub(super) struct Node {
    pub op: Op,
    pub loc: Loc,
}

/// A compiled statement.
pub(super) enum CStmt {
    Seq(Vec<CStmt>),
    For {
        slot: u32,
        extent: u32,
        body: Box<CStmt>,
    },
    If {
        cond: NodeId,
        then: Box<CStmt>,
        otherwise: Option<Box<CStmt>>,
    },
    /// A `let`: evaluates the value, whose location the variable names, then the body.
    Let {
        value: NodeId,
        body: Box<CStmt>,
    },
    Store {
        buf: u32,
        idx: NodeId,
        signed: bool,
        value: NodeId,
    },
    /// A vector store whose value is a vector load of the same width.
    Copy {
        dst: u32,
        dst_idx: NodeId,
        dst_signed: bool,
        src: u32,
        src_idx: NodeId,
        src_signed: bool,
        lanes: u32,
    },
    Barrier,
    /// A warp-wide fragment operation.
    Frag(Box<CFrag>),
    /// A device-scope fence: publishes the block's writes to the blocks that observe its
    /// next atomic ([`super::sync`]).
    Fence,
    /// `old = atomic_add(buf[idx], value)`; `old` a shared or local slot, if any.
    AtomicAdd {
        buf: u32,
        idx: NodeId,
        signed: bool,
        value: NodeId,
        old: Option<(u32, NodeId, bool)>,
    },
    /// A prefetch hint: reads nothing, but its element must be in bounds, as a load's.
    Prefetch {
        buf: u32,
        idx: NodeId,
        signed: bool,
    },
}

/// Where a buffer lives, as the executor sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BufKind {
    Global,
    Shared,
    Local,
}

/// A buffer the kernel touches.
pub(super) struct BufSlot {
    pub buffer: Buffer,
    pub kind: BufKind,
    pub numel: usize,
}

/// A compiled kernel.
pub(super) struct Program {
    pub kernel: String,
    pub nodes: Vec<Node>,
    pub body: CStmt,
    pub n_uni: usize,
    pub n_cols: usize,
    /// Uniform slots holding constants, set once.
    pub consts: Vec<(u32, Raw)>,
    /// Uniform slots holding scalar parameters.
    pub scalars: Vec<(u32, Var)>,
    /// Columns of `threadIdx.{x,y,z}` and `blockIdx.{x,y,z}` (per lane: the executor
    /// runs several blocks side by side).
    pub thread_cols: [u32; 3],
    pub block_cols: [u32; 3],
    pub bufs: Vec<BufSlot>,
    /// The kernel's fragment arrays, by slot.
    pub frags: Vec<Fragment>,
    /// The kernel's mbarrier arrays, by slot.
    pub mbars: Vec<MBarrier>,
    /// By buffer slot: whether a `wgmma` reads it (the async proxy), so that thread
    /// writes into it are tracked for the proxy fence (see `hopper_exec`).
    pub async_read: Vec<bool>,
    /// Whether each barrier fences the threads' writes against the async proxy: a
    /// kernel with asynchronous copies (CUDA writes `fence.proxy.async` after the copies'
    /// wait at every barrier of such a kernel that has `wgmma`s).
    pub fence_at_barriers: bool,
}

/// Compiles `kernel`, checking types, bindings and buffer uses.
pub(super) fn compile(kernel: &Kernel) -> Result<Program, InterpError> {
    let mut c = Compiler {
        kernel,
        nodes: Vec::new(),
        tys: Vec::new(),
        n_uni: 0,
        n_cols: 6,
        consts: Vec::new(),
        scalars: Vec::new(),
        scope: HashMap::new(),
        bufs: Vec::new(),
        buf_index: HashMap::new(),
        access: Vec::new(),
        mbars: Vec::new(),
        async_read: Default::default(),
    };
    for p in &kernel.params {
        match p {
            KernelParam::Buffer { buffer, access } => {
                c.add_buffer(buffer, BufKind::Global, Some(*access))?
            }
            KernelParam::Scalar(v) => {
                let slot = c.new_uni();
                c.scalars.push((slot, v.clone()));
                c.bind(v, Loc::Uni(slot), v.dtype());
            }
        }
    }
    for b in &kernel.shared {
        c.add_buffer(b, BufKind::Shared, None)?;
    }
    for b in &kernel.locals {
        c.add_buffer(b, BufKind::Local, None)?;
    }
    if !kernel.fragments.is_empty() {
        let threads: u64 = kernel.block.iter().map(|&b| b as u64).product();
        if !threads.is_multiple_of(WARP as u64) {
            return Err(c.unsupported(format!(
                "matrix fragments need whole warps: a block of {threads} threads is not a \
                 multiple of {WARP}"
            )));
        }
    }
    let body = c.stmt(&kernel.body)?;
    let async_read = (0..c.bufs.len() as u32)
        .map(|b| c.async_read.contains(&b))
        .collect();
    Ok(Program {
        kernel: kernel.name.clone(),
        nodes: c.nodes,
        body,
        n_uni: c.n_uni as usize,
        n_cols: c.n_cols as usize,
        consts: c.consts,
        scalars: c.scalars,
        // Columns 0..6 are reserved for the thread and block indices.
        thread_cols: [0, 1, 2],
        block_cols: [3, 4, 5],
        bufs: c.bufs,
        frags: kernel.fragments.clone(),
        mbars: c.mbars,
        async_read,
        fence_at_barriers: kernel.async_copies,
    })
}

struct Compiler<'k> {
    kernel: &'k Kernel,
    nodes: Vec<Node>,
    tys: Vec<DType>,
    n_uni: u32,
    n_cols: u32,
    consts: Vec<(u32, Raw)>,
    scalars: Vec<(u32, Var)>,
    /// Variable id -> its locations, innermost binding last.
    scope: HashMap<u64, Vec<(Loc, DType)>>,
    bufs: Vec<BufSlot>,
    buf_index: HashMap<u64, u32>,
    access: Vec<Option<Access>>,
    mbars: Vec<MBarrier>,
    /// Buffer slots a `wgmma` reads.
    async_read: std::collections::HashSet<u32>,
}

impl Compiler<'_> {
    fn name(&self) -> String {
        self.kernel.name.clone()
    }

    fn new_uni(&mut self) -> u32 {
        self.n_uni += 1;
        self.n_uni - 1
    }

    fn new_col(&mut self) -> u32 {
        self.n_cols += 1;
        self.n_cols - 1
    }

    fn push(&mut self, op: Op, loc: Loc, ty: DType) -> NodeId {
        self.nodes.push(Node { op, loc });
        self.tys.push(ty);
        (self.nodes.len() - 1) as NodeId
    }

    fn ty(&self, n: NodeId) -> DType {
        self.tys[n as usize]
    }

    fn is_uni(&self, n: NodeId) -> bool {
        matches!(self.nodes[n as usize].loc, Loc::Uni(_))
    }

    /// A location for a node computed from `operands`: uniform if they all are.
    fn result_loc(&mut self, operands: &[NodeId]) -> Loc {
        if operands.iter().all(|&n| self.is_uni(n)) {
            Loc::Uni(self.new_uni())
        } else {
            Loc::Col(self.new_col())
        }
    }

    fn bind(&mut self, v: &Var, loc: Loc, ty: DType) {
        self.scope.entry(v.id()).or_default().push((loc, ty));
    }

    fn unbind(&mut self, v: &Var) {
        if let Some(stack) = self.scope.get_mut(&v.id()) {
            stack.pop();
        }
    }

    fn add_buffer(
        &mut self,
        b: &Buffer,
        kind: BufKind,
        access: Option<Access>,
    ) -> Result<(), InterpError> {
        let numel = usize::try_from(b.numel())
            .ok()
            .filter(|_| b.shape().iter().all(|&d| d > 0))
            .ok_or_else(|| InterpError::BadShape {
                kernel: self.name(),
                buffer: b.name().to_string(),
                shape: b.shape().to_vec(),
            })?;
        self.buf_index.insert(b.id(), self.bufs.len() as u32);
        self.bufs.push(BufSlot {
            buffer: b.clone(),
            kind,
            numel,
        });
        self.access.push(access);
        Ok(())
    }

    /// The slot of `b`, checking that the kernel may access it with `op`.
    fn buffer(&self, b: &Buffer, op: MemOp) -> Result<u32, InterpError> {
        let Some(&slot) = self.buf_index.get(&b.id()) else {
            return Err(InterpError::UnknownBuffer {
                kernel: self.name(),
                buffer: b.name().to_string(),
            });
        };
        if let Some(access) = self.access[slot as usize] {
            let allowed = match op {
                MemOp::Read => access.reads(),
                MemOp::Write => access.writes(),
            };
            if !allowed {
                return Err(InterpError::AccessViolation {
                    kernel: self.name(),
                    buffer: b.name().to_string(),
                    access,
                    op,
                });
            }
        }
        Ok(slot)
    }

    fn mismatch(&self, e: &Expr, detail: impl Into<String>) -> InterpError {
        InterpError::TypeMismatch {
            kernel: self.name(),
            expr: e.to_string(),
            detail: detail.into(),
        }
    }

    fn unsupported(&self, detail: impl Into<String>) -> InterpError {
        InterpError::Unsupported {
            kernel: self.name(),
            detail: detail.into(),
        }
    }

    fn constant(&mut self, raw: Raw, ty: DType) -> NodeId {
        let slot = self.new_uni();
        self.consts.push((slot, raw));
        self.push(Op::Leaf, Loc::Uni(slot), ty)
    }

    /// A flat index: exactly one `i32` (or `u32`) expression.
    fn index(&mut self, e: &Expr, indices: &[Expr]) -> Result<(NodeId, bool), InterpError> {
        let [index] = indices else {
            return Err(self.unsupported(format!(
                "`{e}` has {} indices; lowered accesses have one flat index",
                indices.len()
            )));
        };
        let n = self.expr(index)?;
        match self.ty(n) {
            DType::I32 => Ok((n, true)),
            DType::U32 => Ok((n, false)),
            t => Err(self.mismatch(e, format!("index of type {t}"))),
        }
    }

    fn expr(&mut self, e: &Expr) -> Result<NodeId, InterpError> {
        Ok(match e {
            Expr::Int(v, ty) => {
                let raw = value::int_const(*v, *ty)
                    .ok_or_else(|| self.mismatch(e, format!("{v} is not a {ty} constant")))?;
                self.constant(raw, *ty)
            }
            Expr::Float(v, ty) => {
                let raw = value::float_const(*v, *ty)
                    .ok_or_else(|| self.mismatch(e, format!("float constant of type {ty}")))?;
                self.constant(raw, *ty)
            }
            Expr::Bool(b) => self.constant(*b as Raw, DType::Bool),
            Expr::Var(v) => {
                let Some(&(loc, ty)) = self.scope.get(&v.id()).and_then(|s| s.last()) else {
                    return Err(InterpError::UnboundVar {
                        kernel: self.name(),
                        var: v.name().to_string(),
                    });
                };
                self.push(Op::Leaf, loc, ty)
            }
            Expr::Builtin(a) => {
                let col = a.dim() as u32 + if a.is_block() { 3 } else { 0 };
                self.push(Op::Leaf, Loc::Col(col), DType::I32)
            }
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.expr(a)?, self.expr(b)?);
                let ty = self.ty(x);
                if self.ty(y) != ty {
                    return Err(
                        self.mismatch(e, format!("operands of types {} and {}", ty, self.ty(y)))
                    );
                }
                let f = value::bin_fn(*op, ty)
                    .ok_or_else(|| self.mismatch(e, format!("{op:?} on {ty}")))?;
                let res = if op.is_predicate() { DType::Bool } else { ty };
                let loc = self.result_loc(&[x, y]);
                let node = match op {
                    BinOp::And => Op::And(x, y),
                    BinOp::Or => Op::Or(x, y),
                    _ => Op::Bin(f, x, y),
                };
                self.push(node, loc, res)
            }
            Expr::Unary(op, a) => {
                let x = self.expr(a)?;
                let ty = self.ty(x);
                let f = value::un_fn(*op, ty)
                    .ok_or_else(|| self.mismatch(e, format!("{op:?} on {ty}")))?;
                let loc = self.result_loc(&[x]);
                self.push(Op::Un(f, x), loc, ty)
            }
            Expr::Cast(to, a) => {
                let x = self.expr(a)?;
                let loc = self.result_loc(&[x]);
                let from = self.ty(x);
                self.push(Op::Cast(from, *to, x), loc, *to)
            }
            Expr::Select(c, t, f) => {
                let (c, t, f) = (self.expr(c)?, self.expr(t)?, self.expr(f)?);
                if self.ty(c) != DType::Bool {
                    return Err(self.mismatch(e, format!("condition of type {}", self.ty(c))));
                }
                if self.ty(t) != self.ty(f) {
                    return Err(self.mismatch(
                        e,
                        format!("branches of types {} and {}", self.ty(t), self.ty(f)),
                    ));
                }
                let ty = self.ty(t);
                let loc = self.result_loc(&[c, t, f]);
                self.push(Op::Select(c, t, f), loc, ty)
            }
            Expr::Call(f, args) => {
                if args.len() != f.arity() {
                    return Err(
                        self.mismatch(e, format!("{} takes {} arguments", f.name(), f.arity()))
                    );
                }
                if *f == Intrinsic::ShuffleXor {
                    let Expr::Int(mask @ 1..=1023, DType::I32) = args[1] else {
                        return Err(self.mismatch(
                            e,
                            "the mask of shuffle_xor must be an i32 constant from 1 to 1023",
                        ));
                    };
                    let v = self.expr(&args[0])?;
                    let ty = self.ty(v);
                    if !matches!(ty, DType::F32 | DType::I32 | DType::U32) {
                        return Err(self.mismatch(e, format!("shuffle_xor on {ty}")));
                    }
                    let loc = self.result_loc(&[v]);
                    return Ok(self.push(Op::Shuffle(v, mask as u32), loc, ty));
                }
                let mut ids = [0; 3];
                for (slot, a) in ids.iter_mut().zip(args) {
                    *slot = self.expr(a)?;
                }
                let ids_used = &ids[..args.len()];
                let ty = self.ty(ids[0]);
                if ids_used.iter().any(|&n| self.ty(n) != ty) {
                    return Err(self.mismatch(e, "arguments of different types"));
                }
                let func = value::call_fn(*f, ty)
                    .ok_or_else(|| self.mismatch(e, format!("{} on {ty}", f.name())))?;
                let loc = self.result_loc(ids_used);
                self.push(Op::Call(func, ids, args.len()), loc, ty)
            }
            Expr::Load {
                buffer,
                indices,
                lanes,
            } => {
                if *lanes != 1 {
                    return Err(self.unsupported(format!(
                        "vector load `{e}` outside a vector store of the same width"
                    )));
                }
                let buf = self.buffer(buffer, MemOp::Read)?;
                let (idx, signed) = self.index(e, indices)?;
                let loc = Loc::Col(self.new_col());
                let op = Op::Load {
                    buf,
                    idx,
                    signed,
                    as_bool: buffer.dtype() == DType::Bool,
                };
                self.push(op, loc, buffer.dtype())
            }
            Expr::Reduce(_) => return Err(self.unsupported(format!("te reduction `{e}`"))),
        })
    }

    fn stmt(&mut self, s: &KStmt) -> Result<CStmt, InterpError> {
        Ok(match s {
            KStmt::Seq(items) => CStmt::Seq(
                items
                    .iter()
                    .map(|i| self.stmt(i))
                    .collect::<Result<_, _>>()?,
            ),
            KStmt::For {
                var, extent, body, ..
            } => {
                if !var.dtype().is_int() {
                    return Err(self.mismatch(&var.expr(), "loop variable is not an integer"));
                }
                let extent = u32::try_from((*extent).max(0))
                    .ok()
                    .filter(|&x| x <= i32::MAX as u32)
                    .ok_or_else(|| self.unsupported(format!("loop `{var}` of extent {extent}")))?;
                let slot = self.new_uni();
                self.bind(var, Loc::Uni(slot), var.dtype());
                let body = self.stmt(body);
                self.unbind(var);
                CStmt::For {
                    slot,
                    extent,
                    body: Box::new(body?),
                }
            }
            KStmt::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond)?;
                if self.ty(c) != DType::Bool {
                    return Err(self.mismatch(cond, "`if` condition is not a bool"));
                }
                CStmt::If {
                    cond: c,
                    then: Box::new(self.stmt(then)?),
                    otherwise: match otherwise {
                        Some(o) => Some(Box::new(self.stmt(o)?)),
                        None => None,
                    },
                }
            }
            KStmt::Let { var, value, body } => {
                let v = self.expr(value)?;
                if self.ty(v) != var.dtype() {
                    return Err(self.mismatch(
                        value,
                        format!("`{var}: {}` bound to a {}", var.dtype(), self.ty(v)),
                    ));
                }
                let loc = self.nodes[v as usize].loc;
                self.bind(var, loc, var.dtype());
                let body = self.stmt(body);
                self.unbind(var);
                CStmt::Let {
                    value: v,
                    body: Box::new(body?),
                }
            }
            KStmt::Store {
                buffer,
                index,
                value,
                lanes,
            } => self.store(buffer, index, value, *lanes)?,
            KStmt::Barrier => CStmt::Barrier,
            KStmt::Fence => CStmt::Fence,
            KStmt::AtomicAdd(a) => self.atomic_add(a)?,
            KStmt::Prefetch {
                buffer,
                index,
                bytes,
            } => {
                let first = self.prefetch(buffer, index)?;
                // A bulk prefetch: its last element checked inside the buffer too.
                let elems = *bytes as i64 / buffer.dtype().bytes().max(1) as i64;
                if elems > 1 {
                    let last = Expr::binary(BinOp::Add, index.clone(), Expr::int(elems - 1));
                    CStmt::Seq(vec![first, self.prefetch(buffer, &last)?])
                } else {
                    first
                }
            }
            // Launches run one after another here: every wait is already satisfied.
            KStmt::Grid(_) | KStmt::Comment(_) => CStmt::Seq(Vec::new()),
            KStmt::Frag(op) => CStmt::Frag(Box::new(self.frag(op)?)),
            KStmt::Mapping(m) => {
                return Err(InterpError::UnloweredMapping {
                    kernel: self.name(),
                    mapping: m.mapping.to_string(),
                });
            }
        })
    }

    fn store(
        &mut self,
        buffer: &Buffer,
        index: &Expr,
        value: &Expr,
        lanes: u32,
    ) -> Result<CStmt, InterpError> {
        let dst = self.buffer(buffer, MemOp::Write)?;
        let target = Expr::Load {
            buffer: buffer.clone(),
            indices: vec![index.clone()],
            lanes,
        };
        let (idx, signed) = self.index(&target, std::slice::from_ref(index))?;
        if lanes == 1 {
            let v = self.expr(value)?;
            if self.ty(v) != buffer.dtype() {
                return Err(self.mismatch(
                    value,
                    format!(
                        "{} value stored into `{}` of type {}",
                        self.ty(v),
                        buffer.name(),
                        buffer.dtype()
                    ),
                ));
            }
            return Ok(CStmt::Store {
                buf: dst,
                idx,
                signed,
                value: v,
            });
        }
        let copy_of = match value {
            Expr::Load {
                buffer: src,
                indices,
                lanes: l,
            } if *l == lanes && lanes > 1 => Some((src, indices)),
            _ => None,
        };
        let Some((src, indices)) = copy_of else {
            return Err(self.unsupported(format!(
                "vector store `{}[{index}] = {value}` of {lanes} lanes whose value is not a \
                 vector load of the same width",
                buffer.name()
            )));
        };
        if src.dtype() != buffer.dtype() {
            return Err(self.mismatch(
                value,
                format!(
                    "copy from `{}` ({}) into `{}` ({})",
                    src.name(),
                    src.dtype(),
                    buffer.name(),
                    buffer.dtype()
                ),
            ));
        }
        let src_slot = self.buffer(src, MemOp::Read)?;
        let (src_idx, src_signed) = self.index(value, indices)?;
        Ok(CStmt::Copy {
            dst,
            dst_idx: idx,
            dst_signed: signed,
            src: src_slot,
            src_idx,
            src_signed,
            lanes,
        })
    }

    /// A prefetch of a global element: a read of the buffer as far as access rights go.
    fn prefetch(&mut self, buffer: &Buffer, index: &Expr) -> Result<CStmt, InterpError> {
        if buffer.scope() != Scope::Global {
            return Err(self.unsupported(format!(
                "prefetch of `{}`, a {} buffer: prefetches name global memory",
                buffer.name(),
                buffer.scope()
            )));
        }
        let buf = self.buffer(buffer, MemOp::Read)?;
        let whole = Expr::Load {
            buffer: buffer.clone(),
            indices: vec![index.clone()],
            lanes: 1,
        };
        let (idx, signed) = self.index(&whole, std::slice::from_ref(index))?;
        Ok(CStmt::Prefetch { buf, idx, signed })
    }

    /// An atomic fetch-add: on a global `i32`/`u32` element, its old value into a shared
    /// or local element of the same type.
    fn atomic_add(&mut self, a: &AtomicAdd) -> Result<CStmt, InterpError> {
        let dtype = a.buffer.dtype();
        let whole = Expr::Load {
            buffer: a.buffer.clone(),
            indices: a.indices.clone(),
            lanes: 1,
        };
        if !matches!(dtype, DType::I32 | DType::U32) || a.buffer.scope() != Scope::Global {
            return Err(self.unsupported(format!(
                "atomic add on `{}`, a {} {dtype} buffer: atomics take global i32 or u32",
                a.buffer.name(),
                a.buffer.scope()
            )));
        }
        let buf = self.buffer(&a.buffer, MemOp::Write)?;
        self.buffer(&a.buffer, MemOp::Read)?;
        let (idx, signed) = self.index(&whole, &a.indices)?;
        let value = self.expr(&a.value)?;
        if self.ty(value) != dtype {
            return Err(self.mismatch(
                &a.value,
                format!(
                    "{} added atomically to `{}` of type {dtype}",
                    self.ty(value),
                    a.buffer.name()
                ),
            ));
        }
        let old = match &a.old {
            None => None,
            Some((b, indices)) => {
                if b.dtype() != dtype || b.scope() == Scope::Global {
                    return Err(self.unsupported(format!(
                        "the old value of `{}` ({dtype}) into `{}`, a {} {}: it goes to a shared or local element of the same type",
                        a.buffer.name(),
                        b.name(),
                        b.scope(),
                        b.dtype()
                    )));
                }
                let slot = self.buffer(b, MemOp::Write)?;
                let target = Expr::Load {
                    buffer: b.clone(),
                    indices: indices.clone(),
                    lanes: 1,
                };
                let (i, s) = self.index(&target, indices)?;
                Some((slot, i, s))
            }
        };
        Ok(CStmt::AtomicAdd {
            buf,
            idx,
            signed,
            value,
            old,
        })
    }
}
