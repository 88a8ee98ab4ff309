//! A sum, mean, maximum or minimum over `axes` (sorted), each kept with size 1 where
//! `keep_dims`: ONNX's ReduceSum, ReduceMean, ReduceMax, ReduceMin, run by the rows
//! template; and the ONNX ops composed from them (`cumsum.rs`, `prod.rs`, `topk.rs`,
//! `hardmax.rs`, `lp_norm.rs`: LpNormalization).

mod cumsum;
mod hardmax;
mod lp_norm;
mod prod;
mod topk;

use std::fmt;

use ndarray::{ArrayD, Axis, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, float};
use super::{
    Binary, Expand, ExportNode, IndexUse, Inline, Op, OpDef, Reduction, Reshape, Role, Unary,
};
use crate::tensor::{Tensor, TensorId};

/// What a [`Reduce`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceKind {
    Sum,
    Mean,
    Max,
    Min,
}

impl ReduceKind {
    /// ONNX's op name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "ReduceSum",
            ReduceKind::Mean => "ReduceMean",
            ReduceKind::Max => "ReduceMax",
            ReduceKind::Min => "ReduceMin",
        }
    }
}

/// A reduction over axes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduce {
    pub kind: ReduceKind,
    pub axes: Vec<usize>,
    pub keep_dims: bool,
}

impl OpDef for Reduce {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        use super::symbolic::{Carry, Fill, SymDim};
        let reduced = x.dims[0]
            .iter()
            .filter(|d| self.axes.contains(&d.axis))
            .count();
        let output: Vec<SymDim> = x.dims[0]
            .iter()
            .filter(|d| !self.axes.contains(&d.axis))
            .map(|d| SymDim {
                axis: if self.keep_dims {
                    d.axis
                } else {
                    d.axis - self.axes.iter().filter(|&&a| a < d.axis).count()
                },
                inner: d.inner,
            })
            .collect();
        if reduced == 0 {
            return Carry::Rows(output);
        }
        // Over the symbol: the rows past n are what leaves the result unchanged, and a
        // mean divides by n, not the maximum.
        let fill = match self.kind {
            ReduceKind::Sum | ReduceKind::Mean => Fill::Zero,
            ReduceKind::Max => Fill::Lowest,
            ReduceKind::Min => Fill::Highest,
        };
        Carry::Bounded {
            masks: vec![(0, fill)],
            mean_dims: if self.kind == ReduceKind::Mean {
                reduced
            } else {
                0
            },
            output,
        }
    }

    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(axes={:?}, keepdims={})",
            self.axes,
            u8::from(self.keep_dims)
        )
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let (axes, keep_dims) = (&self.axes, self.keep_dims);
        arity(inputs, 1, 1)?;
        float(inputs[0], 0)?;
        let s = &inputs[0].shape;
        if axes.windows(2).any(|w| w[0] >= w[1]) || axes.iter().any(|&a| a >= s.len()) {
            return Err(format!(
                "axes {axes:?} must be distinct dimensions of `{}` {s:?}, in order",
                inputs[0].name
            ));
        }
        let shape = s
            .iter()
            .enumerate()
            .filter_map(|(d, &n)| match (axes.contains(&d), keep_dims) {
                (false, _) => Some(n),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        Ok((shape, inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        reduce(x[0], self.kind, &self.axes, self.keep_dims)
    }

    fn role(&self) -> Role<'_> {
        Role::Reduction(Reduction::Reduce(self))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("keepdims", i64::from(self.keep_dims));
        // ReduceSum takes its axes as an input from opset 13; the others as an attribute
        // until opset 18.
        match self.kind {
            ReduceKind::Sum => {
                node.const_ints("axes", self.axes.iter().map(|&a| a as i64).collect())
            }
            ReduceKind::Mean | ReduceKind::Max | ReduceKind::Min => node.ints("axes", &self.axes),
        }
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

fn reduce(x: &ArrayD<f64>, kind: ReduceKind, axes: &[usize], keep_dims: bool) -> ArrayD<f64> {
    let mut out = x.clone();
    // Highest axis first, so the lower ones keep their numbers; each kept as size 1.
    for &a in axes.iter().rev() {
        let n = out.shape()[a] as f64;
        let r = match kind {
            ReduceKind::Sum => out.sum_axis(Axis(a)),
            ReduceKind::Mean => out.sum_axis(Axis(a)) / n,
            ReduceKind::Max => out.fold_axis(Axis(a), f64::NEG_INFINITY, |m, &v| m.max(v)),
            ReduceKind::Min => out.fold_axis(Axis(a), f64::INFINITY, |m, &v| m.min(v)),
        };
        out = r.insert_axis(Axis(a));
    }
    if keep_dims {
        return out;
    }
    let shape: Vec<usize> = x
        .shape()
        .iter()
        .enumerate()
        .filter(|(d, _)| !axes.contains(d))
        .map(|(_, &n)| n)
        .collect();
    out.into_shape_with_order(IxDyn(&shape))
        .expect("only size-1 axes dropped")
}

/// ONNX's ReduceMean, ReduceSum, ReduceMax and ReduceMin; the reductions that are
/// compositions of ReduceSum and ReduceMax with elementwise ops (ReduceL1, ReduceL2,
/// ReduceSumSquare, ReduceLogSum, ReduceLogSumExp); and ArgMax and ArgMin, compositions
/// of ReduceMax or ReduceMin; CumSum, ReduceProd and TopK, compositions of ReduceSum.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("ArgMax", &[1, 11, 12, 13], |n| import_arg(n, true)),
    OnnxOp::new("ArgMin", &[1, 11, 12, 13], |n| import_arg(n, false)),
    OnnxOp::new("CumSum", &[11, 14], cumsum::import),
    OnnxOp::new("Hardmax", &[1, 11, 13], hardmax::import),
    OnnxOp::new("LpNormalization", &[1, 22], lp_norm::import),
    OnnxOp::new("ReduceL1", &[13, 18], |n| import_composed(n, Composed::L1)),
    OnnxOp::new("ReduceL2", &[13, 18], |n| import_composed(n, Composed::L2)),
    OnnxOp::new("ReduceLogSum", &[1, 11, 13, 18], |n| {
        import_composed(n, Composed::LogSum)
    }),
    OnnxOp::new("ReduceLogSumExp", &[1, 11, 13, 18], |n| {
        import_composed(n, Composed::LogSumExp)
    }),
    OnnxOp::new("ReduceMax", &[1, 11, 12, 13, 18, 20], |n| {
        import(n, ReduceKind::Max)
    }),
    OnnxOp::new("ReduceMean", &[1, 11, 13, 18], |n| {
        import(n, ReduceKind::Mean)
    }),
    OnnxOp::new("ReduceMin", &[1, 11, 12, 13, 18, 20], |n| {
        import(n, ReduceKind::Min)
    }),
    OnnxOp::new("ReduceProd", &[1, 11, 13, 18], prod::import),
    OnnxOp::new("ReduceSum", &[1, 11, 13], |n| import(n, ReduceKind::Sum)),
    OnnxOp::new("ReduceSumSquare", &[1, 11, 13, 18], |n| {
        import_composed(n, Composed::SumSquare)
    }),
    OnnxOp::new("TopK", &[1, 10, 11], topk::import),
];

/// A Reduce node's input, the axes it reduces (sorted, distinct; `None` where
/// `noop_with_empty_axes` makes it reduce nothing) and `keepdims`.
struct ReduceNode {
    x: TensorId,
    axes: Option<Vec<usize>>,
    keep_dims: bool,
}

/// Reads a Reduce node: axes from the attribute (ReduceSum before 13, the others before
/// 18) or from input 1 (a constant) after; none or an empty list reduce every axis, or
/// nothing where `noop_with_empty_axes`.
fn reduction(n: &mut dyn OnnxNode) -> Result<ReduceNode, OnnxError> {
    let x = n.data(0)?;
    let r = n.shape(x).len();
    let axes = match n.ints("axes")? {
        Some(v) => Some(v),
        None => n.int_input(1, "axes")?,
    };
    let keep_dims = n.flag("keepdims", true)?;
    let axes: Option<Vec<usize>> = match axes {
        Some(v) if !v.is_empty() => {
            let mut a = v
                .iter()
                .map(|&v| n.axis("axes", v, r, false))
                .collect::<Result<Vec<_>, _>>()?;
            a.sort_unstable();
            a.dedup();
            Some(a)
        }
        Some(_) | None if n.flag("noop_with_empty_axes", false)? => None,
        Some(_) | None => Some((0..r).collect()),
    };
    Ok(ReduceNode { x, axes, keep_dims })
}

/// Where the node reduces an axis of length 0 (and leaves every other one non-empty),
/// emits its output as `identity` everywhere — the empty sum's 0, the empty product's 1,
/// the empty maximum's −∞, as ONNX's reference has them — and returns true: the empty
/// input is then read by nothing (weft computes no empty tensor).
fn empty_set(
    n: &mut dyn OnnxNode,
    node: &ReduceNode,
    identity: Option<f32>,
) -> Result<bool, OnnxError> {
    let Some(axes) = &node.axes else {
        return Ok(false);
    };
    let xs = n.shape(node.x);
    if !axes.iter().any(|&a| xs[a] == 0) {
        return Ok(false);
    }
    let shape: Vec<usize> = (0..xs.len())
        .filter(|d| node.keep_dims || !axes.contains(d))
        .map(|d| if axes.contains(&d) { 1 } else { xs[d] })
        .collect();
    if shape.contains(&0) {
        return Ok(false);
    }
    // ONNX leaves the empty mean undefined (ONNX Runtime gives 0, NumPy NaN).
    let identity = identity.ok_or_else(|| {
        n.err("the mean of an empty set, which ONNX leaves undefined (input 0 is empty along the reduced axes)")
    })?;
    let dtype = n.tensor(node.x).dtype;
    if !dtype.is_float() && !identity.is_finite() {
        return Err(n.err(format!(
            "input 0 is {dtype} and empty along the reduced axes: weft has no integer for {identity}"
        )));
    }
    let value = n.add_constant("empty_set", vec![], vec![identity], dtype);
    n.emit(Op::Expand(Expand { shape }), vec![value])?;
    Ok(true)
}

fn import(n: &mut dyn OnnxNode, kind: ReduceKind) -> Result<(), OnnxError> {
    let node = reduction(n)?;
    let identity = match kind {
        ReduceKind::Sum => Some(0.0),
        ReduceKind::Mean => None,
        ReduceKind::Max => Some(f32::NEG_INFINITY),
        ReduceKind::Min => Some(f32::INFINITY),
    };
    if empty_set(n, &node, identity)? {
        return Ok(());
    }
    let ReduceNode { x, axes, keep_dims } = node;
    let Some(axes) = axes else {
        return n.emit(Op::Identity, vec![x]);
    };
    n.emit(
        Op::Reduce(Reduce {
            kind,
            axes,
            keep_dims,
        }),
        vec![x],
    )
}

/// The ONNX reductions weft composes from ReduceSum and ReduceMax.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Composed {
    /// `Σ |x|`.
    L1,
    /// `sqrt(Σ x²)`.
    L2,
    /// `Σ x²`.
    SumSquare,
    /// `log Σ x`.
    LogSum,
    /// `m + log Σ exp(x − m)`, `m` the maximum.
    LogSumExp,
}

/// ReduceL1 (Abs, ReduceSum), ReduceL2 (Mul, ReduceSum, Sqrt), ReduceSumSquare (Mul,
/// ReduceSum), ReduceLogSum (ReduceSum, Log) and ReduceLogSumExp (below). Where
/// `noop_with_empty_axes` leaves no axis to reduce, each is its elementwise part over a
/// single element, as ONNX's reference and ONNX Runtime compute it: `|x|`, `|x|`, `x²`,
/// `log x`, `x`.
fn import_composed(n: &mut dyn OnnxNode, op: Composed) -> Result<(), OnnxError> {
    let node = reduction(n)?;
    let identity = match op {
        Composed::L1 | Composed::L2 | Composed::SumSquare => Some(0.0),
        Composed::LogSum | Composed::LogSumExp => Some(f32::NEG_INFINITY),
    };
    if empty_set(n, &node, identity)? {
        return Ok(());
    }
    let ReduceNode { x, axes, keep_dims } = node;
    let abs = Op::Unary(Unary::Abs);
    let square = Op::Binary(Binary::Mul);
    let Some(axes) = axes else {
        return match op {
            Composed::L1 | Composed::L2 => n.emit(abs, vec![x]),
            Composed::SumSquare => n.emit(square, vec![x, x]),
            Composed::LogSum => n.emit(Op::Unary(Unary::Log), vec![x]),
            Composed::LogSumExp => n.emit(Op::Identity, vec![x]),
        };
    };
    let sum = |keep_dims| {
        Op::Reduce(Reduce {
            kind: ReduceKind::Sum,
            axes: axes.clone(),
            keep_dims,
        })
    };
    match op {
        Composed::L1 => {
            let a = n.step("abs", abs, vec![x])?;
            n.emit(sum(keep_dims), vec![a])
        }
        Composed::SumSquare => {
            let sq = n.step("square", square, vec![x, x])?;
            n.emit(sum(keep_dims), vec![sq])
        }
        Composed::L2 => {
            let sq = n.step("square", square, vec![x, x])?;
            let s = n.step("sum", sum(keep_dims), vec![sq])?;
            n.emit(Op::Unary(Unary::Sqrt), vec![s])
        }
        Composed::LogSum => {
            let s = n.step("sum", sum(keep_dims), vec![x])?;
            n.emit(Op::Unary(Unary::Log), vec![s])
        }
        Composed::LogSumExp => log_sum_exp(n, x, axes.clone(), keep_dims),
    }
}

/// `m + log Σ exp(d)` with `m` the maximum over the axes (kept as 1s) and `d = x − m`,
/// except that `d` is 0 where `x = m`: finite for large inputs, and right where `m` is
/// infinite (`−∞` where every element is, `+∞` where one is), which `x − m` alone would
/// make NaN. A NaN element makes the result NaN.
fn log_sum_exp(
    n: &mut dyn OnnxNode,
    x: TensorId,
    axes: Vec<usize>,
    keep_dims: bool,
) -> Result<(), OnnxError> {
    let xs = n.shape(x);
    let dtype = n.tensor(x).dtype;
    let m = n.step(
        "max",
        Op::Reduce(Reduce {
            kind: ReduceKind::Max,
            axes: axes.clone(),
            keep_dims: true,
        }),
        vec![x],
    )?;
    let at_max = n.step("at_max", Op::Binary(Binary::Equal), vec![x, m])?;
    let diff = n.step("diff", Op::Binary(Binary::Sub), vec![x, m])?;
    let zero = n.add_constant("zero", vec![], vec![0.0], dtype);
    let d = n.step("shifted", Op::Where, vec![at_max, zero, diff])?;
    let e = n.step("exp", Op::Unary(Unary::Exp), vec![d])?;
    let s = n.step(
        "sum",
        Op::Reduce(Reduce {
            kind: ReduceKind::Sum,
            axes: axes.clone(),
            keep_dims,
        }),
        vec![e],
    )?;
    let log = n.step("log_sum", Op::Unary(Unary::Log), vec![s])?;
    let m = if keep_dims {
        m
    } else {
        let shape = xs
            .iter()
            .enumerate()
            .filter(|(d, _)| !axes.contains(d))
            .map(|(_, &v)| v)
            .collect();
        n.step("max_dropped", Op::Reshape(Reshape { shape }), vec![m])?
    };
    n.emit(Op::Binary(Binary::Add), vec![log, m])
}

/// ArgMax (`max`) or ArgMin along `axis` (0 unless given): the extreme `m` along the
/// axis (NaNs masked out), where the input reaches it (`x ≥ m`; `≤` for ArgMin), a
/// constant iota along the axis there and a filler elsewhere, and the smallest of those
/// (the largest where `select_last_index`), cast to an integer (weft's i32 holds ONNX's
/// int64 indices). Integer inputs compare as f32.
///
/// NaN as ONNX Runtime (CPU) has it, which scans the axis keeping the first element
/// until a later one is greater (smaller, for ArgMin; or as great, for the last index):
/// a NaN in first place is never replaced, so the answer is 0; NaNs elsewhere are never
/// picked. (NumPy, and ONNX's reference, pick the first NaN instead.)
///
/// weft's max (min) reduction starts from the lowest (highest) finite value, so a row
/// of −∞ (+∞) and NaN reduces to that value rather than to −∞: `m` at that value or past
/// it is taken as the infinity, whose elements are then the hits. (Its cost: at ±3.4e38
/// exactly, that value ties with the infinity.)
fn import_arg(n: &mut dyn OnnxNode, max: bool) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let xs = n.shape(x);
    let axis = n.int("axis", 0)?;
    let axis = n.axis("axis", axis, xs.len(), false)?;
    let keep_dims = n.flag("keepdims", true)?;
    let last = n.flag("select_last_index", false)?;
    let len = xs[axis];
    if len == 0 {
        return Err(n.err(format!(
            "input 0 has shape {xs:?}: no element along axis {axis} to pick"
        )));
    }
    let x = if n.tensor(x).dtype.is_float() {
        x
    } else {
        n.step(
            "as_float",
            Op::Cast(super::Cast { to: DType::F32 }),
            vec![x],
        )?
    };
    let dtype = n.tensor(x).dtype;
    let along = |kind| {
        Op::Reduce(Reduce {
            kind,
            axes: vec![axis],
            keep_dims: true,
        })
    };
    let finite = if dtype == DType::F16 {
        f32::from(half::f16::MAX)
    } else {
        f32::MAX
    };
    // The extreme, the infinity past it, the finite limit and the comparisons.
    let (extreme, infinity, limit, past, reaches) = if max {
        (
            ReduceKind::Max,
            f32::NEG_INFINITY,
            -finite,
            Binary::LessOrEqual,
            Binary::GreaterOrEqual,
        )
    } else {
        (
            ReduceKind::Min,
            f32::INFINITY,
            finite,
            Binary::GreaterOrEqual,
            Binary::LessOrEqual,
        )
    };
    let nan = n.step("nan", Op::IsNaN, vec![x])?;
    let infinity = n.add_constant("infinity", vec![], vec![infinity], dtype);
    let masked = n.step("masked", Op::Where, vec![nan, infinity, x])?;
    let m = n.step("extreme", along(extreme), vec![masked])?;
    let limit = n.add_constant("limit", vec![], vec![limit], dtype);
    let at_limit = n.step("at_limit", Op::Binary(past), vec![m, limit])?;
    let m = n.step(
        "extreme_or_infinity",
        Op::Where,
        vec![at_limit, infinity, m],
    )?;
    let hit = n.step("hit", Op::Binary(reaches), vec![x, m])?;
    // The index along the axis, broadcast over the dimensions after it.
    let mut iota_dims = vec![1; xs.len() - axis];
    iota_dims[0] = len;
    let iota = n.add_constant(
        "iota",
        iota_dims,
        (0..len).map(|i| i as f32).collect(),
        DType::F32,
    );
    let (pick, none) = if last {
        (ReduceKind::Max, -1.0)
    } else {
        (ReduceKind::Min, len as f32)
    };
    let none = n.add_constant("none", vec![], vec![none], DType::F32);
    let index = n.step("index", Op::Where, vec![hit, iota, none])?;
    let picked = n.step("picked", along(pick), vec![index])?;
    let starts = vec![0; xs.len()];
    let mut sizes = xs.clone();
    sizes[axis] = 1;
    let first = n.step(
        "first",
        Op::Slice(super::Slice {
            starts,
            steps: vec![1; xs.len()],
            sizes,
        }),
        vec![x],
    )?;
    let first_nan = n.step("first_nan", Op::IsNaN, vec![first])?;
    let zero = n.add_constant("zero", vec![], vec![0.0], DType::F32);
    let mut found = n.step("found", Op::Where, vec![first_nan, zero, picked])?;
    if !keep_dims {
        let mut shape = xs;
        shape.remove(axis);
        found = n.step("dropped", Op::Reshape(Reshape { shape }), vec![found])?;
    }
    n.emit(Op::Cast(super::Cast { to: DType::I32 }), vec![found])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_keep_or_drop_axes() {
        let x = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![0., 0., 1., 3.]).unwrap();
        let m = reduce(&x, ReduceKind::Mean, &[1], false);
        assert_eq!(m.iter().copied().collect::<Vec<_>>(), [0., 2.]);
        let m = reduce(&x, ReduceKind::Max, &[0, 1], true);
        assert_eq!(m.shape(), [1, 1]);
    }
}
