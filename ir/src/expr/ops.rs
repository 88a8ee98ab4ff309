//! Operators, intrinsics and reductions.

use super::{Expr, IterVar};
use crate::dtype::DType;

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

/// Math intrinsics, and one subgroup collective. All take and return floats, except
/// `Abs`, which also takes integers, and `ShuffleXor` (below).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    Exp,
    /// `2^x`: where a kernel folds `log2(e)` into a factor it already applies (a softmax's
    /// scale), one instruction on GPUs (`ex2`) instead of `exp`'s range reduction.
    Exp2,
    Log,
    Sqrt,
    Rsqrt,
    Tanh,
    /// tanh to about 2⁻¹¹ relative error, binary16's own precision: for values an f16
    /// tensor keeps (a fused epilogue of an f16 model). A target may use a hardware
    /// approximation: CUDA's `tanh.approx.f32` (sm_75 and later) is one instruction where
    /// `tanhf` is a range reduction, an exponential and a division. The interpreter and
    /// targets without one compute tanh.
    TanhApprox,
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
    /// `shuffle_xor(value, mask)`: the `value` of the thread whose index in its subgroup
    /// (warp, wavefront, SIMD-group) is this thread's xor `mask` — one step of a butterfly
    /// reduction in registers, with no shared memory and no barrier. `value` is `f32`,
    /// `i32` or `u32`; `mask` an `i32` constant below the target's subgroup size.
    ///
    /// A collective: every thread of the subgroup evaluates it together, so it stands
    /// only where all of them arrive (never under a condition that differs between
    /// them), in a kernel whose threads fill whole subgroups. Subgroups are taken to be
    /// consecutive runs of the block's linear thread index (`x` fastest), as CUDA's warps
    /// are and as the Vulkan drivers and Metal weft runs on number them. The checker
    /// (`weft_codegen_common::check_limits`) refuses a mask the target's subgroups do not
    /// span; the interpreter reports a thread whose partner is absent or not arriving.
    ShuffleXor,
}

impl Intrinsic {
    /// Number of arguments.
    pub fn arity(self) -> usize {
        match self {
            Intrinsic::Pow | Intrinsic::ShuffleXor => 2,
            Intrinsic::Fma => 3,
            _ => 1,
        }
    }
    /// Lower-case name (`exp`), used by the printer as `T.exp`.
    pub fn name(self) -> &'static str {
        match self {
            Intrinsic::Exp => "exp",
            Intrinsic::Exp2 => "exp2",
            Intrinsic::Log => "log",
            Intrinsic::Sqrt => "sqrt",
            Intrinsic::Rsqrt => "rsqrt",
            Intrinsic::Tanh => "tanh",
            Intrinsic::TanhApprox => "tanh_approx",
            Intrinsic::Sigmoid => "sigmoid",
            Intrinsic::Sin => "sin",
            Intrinsic::Cos => "cos",
            Intrinsic::Abs => "abs",
            Intrinsic::Floor => "floor",
            Intrinsic::Ceil => "ceil",
            Intrinsic::Pow => "pow",
            Intrinsic::Fma => "fma",
            Intrinsic::ShuffleXor => "shuffle_xor",
        }
    }

    /// Whether the threads of a subgroup evaluate it together ([`Intrinsic::ShuffleXor`]).
    pub fn is_collective(self) -> bool {
        self == Intrinsic::ShuffleXor
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
