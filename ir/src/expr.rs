//! Variables, buffers and expressions: the vocabulary shared by the te front end, the Func
//! IR and the lowered [`Kernel`](crate::kernel::Kernel).
//!
//! One `Expr` type serves every level. The te front end may build [`Expr::Reduce`] (only at
//! the top of a compute body); the Func IR indexes buffers with one index per dimension;
//! lowering leaves one flat index per access and adds [`Expr::Builtin`] thread indices.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::dtype::DType;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh identity for a variable, buffer or block. Identities are never printed: the
/// printers use names, so output does not depend on the order objects were created in.
pub(crate) fn fresh_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A scalar variable: a loop variable, a block iteration variable, a task index or a
/// scalar kernel parameter. Two `Var`s are the same variable only if they come from the
/// same [`Var::new`] call; the name is for printing.
#[derive(Clone)]
pub struct Var(Arc<VarNode>);

#[derive(Debug)]
struct VarNode {
    id: u64,
    name: String,
    dtype: DType,
}

impl Var {
    /// A new variable with the given name and type.
    pub fn new(name: impl Into<String>, dtype: DType) -> Var {
        Var(Arc::new(VarNode {
            id: fresh_id(),
            name: name.into(),
            dtype,
        }))
    }

    /// A new `i32` index variable.
    pub fn index(name: impl Into<String>) -> Var {
        Var::new(name, DType::I32)
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// The identity of this variable (stable for its lifetime, never printed).
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// A new variable of the same type with another name.
    pub fn renamed(&self, name: impl Into<String>) -> Var {
        Var::new(name, self.dtype())
    }

    /// This variable as an expression.
    pub fn expr(&self) -> Expr {
        Expr::Var(self.clone())
    }
}

impl PartialEq for Var {
    fn eq(&self, other: &Var) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Var {}
impl Hash for Var {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}
impl PartialOrd for Var {
    fn partial_cmp(&self, other: &Var) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Var {
    fn cmp(&self, other: &Var) -> std::cmp::Ordering {
        self.0.id.cmp(&other.0.id)
    }
}
impl fmt::Debug for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.name)
    }
}
impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.name)
    }
}

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Device memory, visible to every thread of every block.
    Global,
    /// On-chip memory shared by the threads of one block (`__shared__`, `var<workgroup>`).
    Shared,
    /// Private to one thread (registers or local memory).
    Local,
}

impl Scope {
    pub fn name(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Shared => "shared",
            Scope::Local => "local",
        }
    }

    /// Parses `global`, `shared` or `local`.
    pub fn parse(s: &str) -> Option<Scope> {
        Some(match s {
            "global" => Scope::Global,
            "shared" => Scope::Shared,
            "local" => Scope::Local,
            _ => return None,
        })
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A multi-dimensional array with a static shape, row-major.
#[derive(Clone)]
pub struct Buffer(Arc<BufferNode>);

struct BufferNode {
    id: u64,
    name: String,
    dtype: DType,
    shape: Vec<i64>,
    scope: Scope,
    producer: Option<Arc<crate::te::ComputeOp>>,
}

impl Buffer {
    /// A new buffer. Every extent must be positive (checked where user shapes enter:
    /// [`crate::te`]).
    pub fn new(name: impl Into<String>, shape: Vec<i64>, dtype: DType, scope: Scope) -> Buffer {
        Buffer(Arc::new(BufferNode {
            id: fresh_id(),
            name: name.into(),
            dtype,
            shape,
            scope,
            producer: None,
        }))
    }

    pub(crate) fn with_producer(
        name: impl Into<String>,
        shape: Vec<i64>,
        dtype: DType,
        producer: Arc<crate::te::ComputeOp>,
    ) -> Buffer {
        Buffer(Arc::new(BufferNode {
            id: fresh_id(),
            name: name.into(),
            dtype,
            shape,
            scope: Scope::Global,
            producer: Some(producer),
        }))
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn shape(&self) -> &[i64] {
        &self.0.shape
    }
    pub fn scope(&self) -> Scope {
        self.0.scope
    }
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }
    /// Number of elements.
    pub fn numel(&self) -> i64 {
        self.0.shape.iter().product()
    }
    /// Size in bytes.
    pub fn bytes(&self) -> i64 {
        self.numel() * self.dtype().bytes() as i64
    }
    /// Row-major strides in elements.
    pub fn strides(&self) -> Vec<i64> {
        let mut s = vec![1; self.ndim()];
        for d in (0..self.ndim().saturating_sub(1)).rev() {
            s[d] = s[d + 1] * self.0.shape[d + 1];
        }
        s
    }
    /// The te compute that defines this buffer, if it was made by [`crate::te::compute`].
    pub fn producer(&self) -> Option<&Arc<crate::te::ComputeOp>> {
        self.0.producer.as_ref()
    }
    /// A new buffer (new identity) with the same type, another name, shape and scope.
    pub fn derive(&self, name: impl Into<String>, shape: Vec<i64>, scope: Scope) -> Buffer {
        Buffer::new(name, shape, self.dtype(), scope)
    }
    /// A load of this buffer at `indices`.
    pub fn load(&self, indices: Vec<Expr>) -> Expr {
        Expr::Load {
            buffer: self.clone(),
            indices,
            lanes: 1,
        }
    }
}

impl PartialEq for Buffer {
    fn eq(&self, other: &Buffer) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Buffer {}
impl Hash for Buffer {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.id.hash(h)
    }
}
impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{:?}:{}@{}",
            self.0.name, self.0.shape, self.0.dtype, self.0.scope
        )
    }
}

/// A GPU thread or block index: what a loop is bound to, and what lowering replaces a
/// bound loop's variable with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ThreadAxis {
    BlockIdxX,
    BlockIdxY,
    BlockIdxZ,
    ThreadIdxX,
    ThreadIdxY,
    ThreadIdxZ,
}

impl ThreadAxis {
    pub const ALL: [ThreadAxis; 6] = [
        ThreadAxis::BlockIdxX,
        ThreadAxis::BlockIdxY,
        ThreadAxis::BlockIdxZ,
        ThreadAxis::ThreadIdxX,
        ThreadAxis::ThreadIdxY,
        ThreadAxis::ThreadIdxZ,
    ];

    /// `blockIdx.x` and its kin.
    pub fn name(self) -> &'static str {
        match self {
            ThreadAxis::BlockIdxX => "blockIdx.x",
            ThreadAxis::BlockIdxY => "blockIdx.y",
            ThreadAxis::BlockIdxZ => "blockIdx.z",
            ThreadAxis::ThreadIdxX => "threadIdx.x",
            ThreadAxis::ThreadIdxY => "threadIdx.y",
            ThreadAxis::ThreadIdxZ => "threadIdx.z",
        }
    }

    /// The printed name of the index variable (`blockIdx_x`).
    pub fn var_name(self) -> &'static str {
        match self {
            ThreadAxis::BlockIdxX => "blockIdx_x",
            ThreadAxis::BlockIdxY => "blockIdx_y",
            ThreadAxis::BlockIdxZ => "blockIdx_z",
            ThreadAxis::ThreadIdxX => "threadIdx_x",
            ThreadAxis::ThreadIdxY => "threadIdx_y",
            ThreadAxis::ThreadIdxZ => "threadIdx_z",
        }
    }

    /// Parses `blockIdx.x` .. `threadIdx.z`.
    pub fn parse(s: &str) -> Option<ThreadAxis> {
        ThreadAxis::ALL.into_iter().find(|a| a.name() == s)
    }

    /// True for `blockIdx.*`.
    pub fn is_block(self) -> bool {
        matches!(
            self,
            ThreadAxis::BlockIdxX | ThreadAxis::BlockIdxY | ThreadAxis::BlockIdxZ
        )
    }

    /// 0 for x, 1 for y, 2 for z.
    pub fn dim(self) -> usize {
        match self {
            ThreadAxis::BlockIdxX | ThreadAxis::ThreadIdxX => 0,
            ThreadAxis::BlockIdxY | ThreadAxis::ThreadIdxY => 1,
            ThreadAxis::BlockIdxZ | ThreadAxis::ThreadIdxZ => 2,
        }
    }
}

impl fmt::Display for ThreadAxis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An axis of a te compute or reduction: a variable and its extent (it runs over
/// `0..extent`).
#[derive(Clone, Debug, PartialEq)]
pub struct IterVar {
    pub var: Var,
    pub extent: i64,
}

impl IterVar {
    pub fn new(name: impl Into<String>, extent: i64) -> IterVar {
        IterVar {
            var: Var::index(name),
            extent,
        }
    }
    pub fn expr(&self) -> Expr {
        self.var.expr()
    }
}

/// Binary operators.
///
/// `FloorDiv`/`FloorMod` are the IR's integer division (Python semantics). `Div` is float
/// division, or C's truncating integer division; `Mod` is C's truncating remainder.
/// Lowering turns floor forms into `Div`/`Mod` only where operands are provably
/// non-negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    FloorDiv,
    FloorMod,
    Min,
    Max,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    /// True for comparisons and logical connectives (their result is `bool`).
    pub fn is_predicate(self) -> bool {
        matches!(
            self,
            BinOp::Eq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge
                | BinOp::And
                | BinOp::Or
        )
    }
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

/// Math intrinsics. All take and return floats, except `Abs`, which also takes integers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    Sigmoid,
    Sin,
    Cos,
    Abs,
    Floor,
    Ceil,
    /// `pow(x, y)`
    Pow,
    /// `fma(a, b, c) = a * b + c`
    Fma,
}

impl Intrinsic {
    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            Intrinsic::Pow => 2,
            Intrinsic::Fma => 3,
            _ => 1,
        }
    }
    /// Lower-case name (`exp`), used by the printer as `T.exp`.
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Exp => "exp",
            Intrinsic::Log => "log",
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Rsqrt => "rsqrt",
            Intrinsic::Tanh => "tanh",
            Intrinsic::Sigmoid => "sigmoid",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Abs => "abs",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Pow => "pow",
            Intrinsic::Fma => "fma",
        }
    }
}

/// Reduction operators of te.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }

    /// The identity element for `dtype` (`0`, `-inf`/lowest, `+inf`/highest).
    pub fn identity(self, dtype: DType) -> Expr {
        match (self, dtype) {
            (ReduceOp::Sum, d) => Expr::zero(d),
            (ReduceOp::Max, DType::F32) => Expr::Float(f32::MIN as f64, DType::F32),
            (ReduceOp::Max, DType::F16) => Expr::Float(-65504.0, DType::F16),
            (ReduceOp::Max, DType::I32) => Expr::Int(i32::MIN as i64, DType::I32),
            (ReduceOp::Max, DType::U32) => Expr::Int(0, DType::U32),
            (ReduceOp::Max, DType::Bool) => Expr::Bool(false),
            (ReduceOp::Min, DType::F32) => Expr::Float(f32::MAX as f64, DType::F32),
            (ReduceOp::Min, DType::F16) => Expr::Float(65504.0, DType::F16),
            (ReduceOp::Min, DType::I32) => Expr::Int(i32::MAX as i64, DType::I32),
            (ReduceOp::Min, DType::U32) => Expr::Int(u32::MAX as i64, DType::U32),
            (ReduceOp::Min, DType::Bool) => Expr::Bool(true),
        }
    }

    /// `acc (op) value` as an expression.
    pub fn combine(self, acc: Expr, value: Expr) -> Expr {
        match self {
            ReduceOp::Sum => Expr::binary(BinOp::Add, acc, value),
            ReduceOp::Max => Expr::binary(BinOp::Max, acc, value),
            ReduceOp::Min => Expr::binary(BinOp::Min, acc, value),
        }
    }
}

/// A te reduction: `op` of `source` over `axes`. Only valid at the top of a compute body.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduce {
    pub op: ReduceOp,
    pub source: Expr,
    pub axes: Vec<IterVar>,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// An integer constant of type `i32` or `u32`.
    Int(i64, DType),
    /// A float constant of type `f32` or `f16`.
    Float(f64, DType),
    Bool(bool),
    Var(Var),
    /// A thread or block index (only after lowering).
    Builtin(ThreadAxis),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Cast(DType, Box<Expr>),
    /// `cond ? then : else`; both branches may be evaluated (`T.if_then_else` guards
    /// loads, see [`Expr::if_then_else`]).
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Call(Intrinsic, Vec<Expr>),
    /// A load of `lanes` consecutive elements (`lanes` > 1 only after vectorization, with
    /// one flat index).
    Load {
        buffer: Buffer,
        indices: Vec<Expr>,
        lanes: u32,
    },
    /// A te reduction (te only; lowered to a block with an init).
    Reduce(Box<Reduce>),
}

impl Expr {
    /// An `i32` constant.
    pub fn int(v: i64) -> Expr {
        Expr::Int(v, DType::I32)
    }
    /// An `f32` constant.
    pub fn f32(v: f32) -> Expr {
        Expr::Float(v as f64, DType::F32)
    }
    /// The zero of `dtype`.
    pub fn zero(dtype: DType) -> Expr {
        match dtype {
            DType::F32 | DType::F16 => Expr::Float(0.0, dtype),
            DType::I32 | DType::U32 => Expr::Int(0, dtype),
            DType::Bool => Expr::Bool(false),
        }
    }
    /// A constant of `dtype` with value `v`.
    pub fn constant(v: f64, dtype: DType) -> Expr {
        match dtype {
            DType::F32 | DType::F16 => Expr::Float(v, dtype),
            DType::I32 | DType::U32 => Expr::Int(v as i64, dtype),
            DType::Bool => Expr::Bool(v != 0.0),
        }
    }

    /// The type of this expression, assuming it is well typed (see
    /// [`crate::te::typecheck`]).
    pub fn dtype(&self) -> DType {
        match self {
            Expr::Int(_, d) | Expr::Float(_, d) | Expr::Cast(d, _) => *d,
            Expr::Bool(_) => DType::Bool,
            Expr::Var(v) => v.dtype(),
            Expr::Builtin(_) => DType::I32,
            Expr::Binary(op, a, _) => {
                if op.is_predicate() {
                    DType::Bool
                } else {
                    a.dtype()
                }
            }
            Expr::Unary(UnOp::Not, _) => DType::Bool,
            Expr::Unary(UnOp::Neg, a) => a.dtype(),
            Expr::Select(_, t, _) => t.dtype(),
            Expr::Call(_, args) => args.first().map(|a| a.dtype()).unwrap_or(DType::F32),
            Expr::Load { buffer, .. } => buffer.dtype(),
            Expr::Reduce(r) => r.source.dtype(),
        }
    }

    /// The value of an integer constant.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Int(v, _) => Some(*v),
            _ => None,
        }
    }

    /// True for constants.
    pub fn is_const(&self) -> bool {
        matches!(self, Expr::Int(..) | Expr::Float(..) | Expr::Bool(_))
    }

    /// `a op b`. A constant operand takes the type of the other operand when both are
    /// floats or both are integers, so `x * 2.0` works for an `f16` `x`.
    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        let (a, b) = coerce_literals(a, b);
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    pub fn floordiv(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::FloorDiv, self, b.into())
    }
    pub fn floormod(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::FloorMod, self, b.into())
    }
    pub fn min(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Min, self, b.into())
    }
    pub fn max(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Max, self, b.into())
    }
    pub fn lt(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Lt, self, b.into())
    }
    pub fn le(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Le, self, b.into())
    }
    pub fn gt(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Gt, self, b.into())
    }
    pub fn ge(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Ge, self, b.into())
    }
    pub fn eq_(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Eq, self, b.into())
    }
    pub fn ne_(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Ne, self, b.into())
    }
    pub fn and(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::And, self, b.into())
    }
    pub fn or(self, b: impl Into<Expr>) -> Expr {
        Expr::binary(BinOp::Or, self, b.into())
    }
    pub fn cast(self, dtype: DType) -> Expr {
        Expr::Cast(dtype, Box::new(self))
    }
    /// `cond ? t : f`.
    pub fn select(cond: Expr, t: impl Into<Expr>, f: impl Into<Expr>) -> Expr {
        let (t, f) = coerce_literals(t.into(), f.into());
        Expr::Select(Box::new(cond), Box::new(t), Box::new(f))
    }
    /// `T.if_then_else(cond, t, f)`. In weft's IR this is a select whose untaken branch
    /// is never a fault: lowering and the emitters keep a guarded load from executing
    /// when `cond` is false.
    pub fn if_then_else(cond: Expr, t: impl Into<Expr>, f: impl Into<Expr>) -> Expr {
        Expr::select(cond, t, f)
    }
    /// An intrinsic call.
    pub fn call(f: Intrinsic, args: Vec<Expr>) -> Expr {
        Expr::Call(f, args)
    }

    /// Conjunction of `parts`; `true` when empty.
    pub fn all(parts: impl IntoIterator<Item = Expr>) -> Expr {
        let mut it = parts.into_iter();
        let Some(first) = it.next() else {
            return Expr::Bool(true);
        };
        it.fold(first, |acc, e| acc.and(e))
    }

    /// Calls `f` on this expression and every sub-expression, parents first.
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) | Expr::Builtin(_) => {}
            Expr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Unary(_, a) | Expr::Cast(_, a) => a.visit(f),
            Expr::Select(c, t, e) => {
                c.visit(f);
                t.visit(f);
                e.visit(f);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| a.visit(f)),
            Expr::Load { indices, .. } => indices.iter().for_each(|a| a.visit(f)),
            Expr::Reduce(r) => r.source.visit(f),
        }
    }

    /// Rebuilds the expression bottom-up through `f`: `f` sees each node after its
    /// children were rebuilt and may replace it.
    pub fn rewrite(&self, f: &mut dyn FnMut(Expr) -> Expr) -> Expr {
        let node = match self {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) | Expr::Builtin(_) => {
                self.clone()
            }
            Expr::Binary(op, a, b) => {
                Expr::Binary(*op, Box::new(a.rewrite(f)), Box::new(b.rewrite(f)))
            }
            Expr::Unary(op, a) => Expr::Unary(*op, Box::new(a.rewrite(f))),
            Expr::Cast(d, a) => Expr::Cast(*d, Box::new(a.rewrite(f))),
            Expr::Select(c, t, e) => Expr::Select(
                Box::new(c.rewrite(f)),
                Box::new(t.rewrite(f)),
                Box::new(e.rewrite(f)),
            ),
            Expr::Call(i, args) => Expr::Call(*i, args.iter().map(|a| a.rewrite(f)).collect()),
            Expr::Load {
                buffer,
                indices,
                lanes,
            } => Expr::Load {
                buffer: buffer.clone(),
                indices: indices.iter().map(|a| a.rewrite(f)).collect(),
                lanes: *lanes,
            },
            Expr::Reduce(r) => Expr::Reduce(Box::new(Reduce {
                op: r.op,
                source: r.source.rewrite(f),
                axes: r.axes.clone(),
            })),
        };
        f(node)
    }

    /// Replaces variables by expressions.
    pub fn substitute(&self, map: &HashMap<Var, Expr>) -> Expr {
        if map.is_empty() {
            return self.clone();
        }
        self.rewrite(&mut |e| match &e {
            Expr::Var(v) => map.get(v).cloned().unwrap_or(e),
            _ => e,
        })
    }

    /// Replaces one variable by an expression.
    pub fn substitute1(&self, var: &Var, value: &Expr) -> Expr {
        self.rewrite(&mut |e| match &e {
            Expr::Var(v) if v == var => value.clone(),
            _ => e,
        })
    }

    /// True if `var` occurs in this expression.
    pub fn uses_var(&self, var: &Var) -> bool {
        let mut found = false;
        self.visit(&mut |e| {
            if let Expr::Var(v) = e {
                found |= v == var;
            }
        });
        found
    }

    /// True if any variable of `vars` occurs in this expression.
    pub fn uses_any(&self, vars: &[Var]) -> bool {
        let mut found = false;
        self.visit(&mut |e| {
            if let Expr::Var(v) = e {
                found |= vars.contains(v);
            }
        });
        found
    }

    /// The distinct variables of this expression, in order of first occurrence.
    pub fn vars(&self) -> Vec<Var> {
        let mut out: Vec<Var> = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Var(v) = e
                && !out.contains(v)
            {
                out.push(v.clone());
            }
        });
        out
    }

    /// True if the expression reads a thread or block index.
    pub fn uses_builtin(&self, pred: &dyn Fn(ThreadAxis) -> bool) -> bool {
        let mut found = false;
        self.visit(&mut |e| {
            if let Expr::Builtin(a) = e {
                found |= pred(*a);
            }
        });
        found
    }

    /// The loads in this expression, outermost first.
    pub fn loads(&self) -> Vec<(&Buffer, &[Expr])> {
        let mut out = Vec::new();
        fn walk<'a>(e: &'a Expr, out: &mut Vec<(&'a Buffer, &'a [Expr])>) {
            match e {
                Expr::Load {
                    buffer, indices, ..
                } => {
                    out.push((buffer, indices.as_slice()));
                    indices.iter().for_each(|i| walk(i, out));
                }
                Expr::Binary(_, a, b) => {
                    walk(a, out);
                    walk(b, out);
                }
                Expr::Unary(_, a) | Expr::Cast(_, a) => walk(a, out),
                Expr::Select(c, t, f) => {
                    walk(c, out);
                    walk(t, out);
                    walk(f, out);
                }
                Expr::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
                Expr::Reduce(r) => walk(&r.source, out),
                _ => {}
            }
        }
        walk(self, &mut out);
        out
    }
}

fn coerce_literals(a: Expr, b: Expr) -> (Expr, Expr) {
    fn retype(lit: &Expr, to: DType) -> Option<Expr> {
        match (lit, to) {
            (Expr::Float(v, _), d) if d.is_float() => Some(Expr::Float(*v, d)),
            (Expr::Int(v, _), d) if d.is_int() => Some(Expr::Int(*v, d)),
            (Expr::Int(v, _), d) if d.is_float() => Some(Expr::Float(*v as f64, d)),
            _ => None,
        }
    }
    let (da, db) = (a.dtype(), b.dtype());
    if da == db {
        return (a, b);
    }
    if a.is_const()
        && !b.is_const()
        && let Some(a2) = retype(&a, db)
    {
        return (a2, b);
    }
    if b.is_const()
        && !a.is_const()
        && let Some(b2) = retype(&b, da)
    {
        return (a, b2);
    }
    (a, b)
}

impl From<i64> for Expr {
    fn from(v: i64) -> Expr {
        Expr::int(v)
    }
}
impl From<i32> for Expr {
    fn from(v: i32) -> Expr {
        Expr::int(v as i64)
    }
}
impl From<f32> for Expr {
    fn from(v: f32) -> Expr {
        Expr::f32(v)
    }
}
impl From<bool> for Expr {
    fn from(v: bool) -> Expr {
        Expr::Bool(v)
    }
}
impl From<&Var> for Expr {
    fn from(v: &Var) -> Expr {
        v.expr()
    }
}
impl From<Var> for Expr {
    fn from(v: Var) -> Expr {
        Expr::Var(v)
    }
}
impl From<&IterVar> for Expr {
    fn from(v: &IterVar) -> Expr {
        v.expr()
    }
}
impl From<&Expr> for Expr {
    fn from(v: &Expr) -> Expr {
        v.clone()
    }
}

macro_rules! arith_op {
    ($trait:ident, $method:ident, $int_op:expr, $float_op:expr) => {
        impl<R: Into<Expr>> std::ops::$trait<R> for Expr {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                let rhs = rhs.into();
                let op = if self.dtype().is_float() || rhs.dtype().is_float() {
                    $float_op
                } else {
                    $int_op
                };
                Expr::binary(op, self, rhs)
            }
        }
        impl<R: Into<Expr>> std::ops::$trait<R> for &Expr {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                std::ops::$trait::$method(self.clone(), rhs)
            }
        }
        impl<R: Into<Expr>> std::ops::$trait<R> for &Var {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                std::ops::$trait::$method(self.expr(), rhs)
            }
        }
        impl<R: Into<Expr>> std::ops::$trait<R> for &IterVar {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                std::ops::$trait::$method(self.expr(), rhs)
            }
        }
    };
}

arith_op!(Add, add, BinOp::Add, BinOp::Add);
arith_op!(Sub, sub, BinOp::Sub, BinOp::Sub);
arith_op!(Mul, mul, BinOp::Mul, BinOp::Mul);
// Integer `/` and `%` are floor division and modulo, as in TVM's `//` and `%`.
arith_op!(Div, div, BinOp::FloorDiv, BinOp::Div);
arith_op!(Rem, rem, BinOp::FloorMod, BinOp::Mod);

impl std::ops::Not for Expr {
    type Output = Expr;
    /// Logical negation of a bool expression.
    fn not(self) -> Expr {
        Expr::Unary(UnOp::Not, Box::new(self))
    }
}

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Unary(UnOp::Neg, Box::new(self))
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::printer::expr_to_string(self))
    }
}
