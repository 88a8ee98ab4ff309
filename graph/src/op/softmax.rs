//! `exp(x − max) / Σ exp(x − max)` along one axis: a normalization of rows, run by the
//! rows template. ONNX's LogSoftmax is imported here too, as the ops it is made of.

use std::fmt;

use ndarray::{ArrayD, Axis};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, axis_of, float};
use super::{
    Binary, ExportNode, IndexUse, Inline, Op, OpDef, Reduce, ReduceKind, Reduction, Reshape, Role,
    Rows, Unary,
};
use crate::tensor::{Tensor, TensorId};

/// A Softmax's axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Softmax {
    pub axis: usize,
}

impl OpDef for Softmax {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        use super::symbolic::{Carry, Fill};
        if x.on(0, self.axis) {
            // Over the symbol: the rows past n get no weight.
            Carry::Bounded {
                masks: vec![(0, Fill::Lowest)],
                mean_dims: 0,
                output: x.dims[0].clone(),
            }
        } else {
            x.same()
        }
    }

    fn name(&self) -> &'static str {
        "Softmax"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(axis={})", self.axis)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        float(inputs[0], 0)?;
        axis_of(self.axis, inputs[0])?;
        Ok((inputs[0].shape.clone(), inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let mut out = x[0].clone();
        for mut lane in out.lanes_mut(Axis(self.axis)) {
            let m = lane.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
            lane.mapv_inplace(|v| (v - m).exp());
            let s = lane.sum();
            lane.mapv_inplace(|v| v / s);
        }
        out
    }

    fn role(&self) -> Role<'_> {
        Role::Reduction(Reduction::Rows(Rows::Softmax(self)))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("axis", self.axis as i64);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's Softmax and LogSoftmax. From opset 13 along one axis (−1 unless given); before
/// 13 over the input coerced to a matrix at `axis` (1 unless given): every dimension from
/// `axis` on makes one row, a different answer wherever `axis` is not the last dimension.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("LogSoftmax", &[1, 11, 13], import_log),
    OnnxOp::new("Softmax", &[1, 11, 13], import),
];

/// What a Softmax normalizes: the input and its axis, or before opset 13 (where `axis`
/// is not the last dimension already) the input reshaped to the matrix `[Π dims[..axis],
/// Π dims[axis..]]` and axis 1, with the input's shape to restore.
struct Rowed {
    x: TensorId,
    axis: usize,
    restore: Option<Vec<usize>>,
}

fn input_and_axis(n: &mut dyn OnnxNode) -> Result<Rowed, OnnxError> {
    let x = n.data(0)?;
    let dims = n.shape(x);
    let r = dims.len();
    let coerced = n.opset() < 13;
    let axis = n.int("axis", if coerced { 1 } else { -1 })?;
    let axis = n.axis("axis", axis, r, false)?;
    if !coerced || axis + 1 == r {
        return Ok(Rowed {
            x,
            axis,
            restore: None,
        });
    }
    let rows = dims[..axis].iter().product();
    let cols = dims[axis..].iter().product();
    let shape = vec![rows, cols];
    let m = n.step("matrix", Op::Reshape(Reshape { shape }), vec![x])?;
    Ok(Rowed {
        x: m,
        axis: 1,
        restore: Some(dims),
    })
}

/// Emits `op` of `inputs` as the node's output, reshaped back where `restore` says.
fn finish(
    n: &mut dyn OnnxNode,
    op: Op,
    inputs: Vec<TensorId>,
    restore: Option<Vec<usize>>,
) -> Result<(), OnnxError> {
    let Some(shape) = restore else {
        return n.emit(op, inputs);
    };
    let y = n.step("rows", op, inputs)?;
    n.emit(Op::Reshape(Reshape { shape }), vec![y])
}

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let Rowed { x, axis, restore } = input_and_axis(n)?;
    finish(n, Op::Softmax(Softmax { axis }), vec![x], restore)
}

/// LogSoftmax as `(x − m) − log Σ exp(x − m)` with `m` the maximum along the axis
/// (ReduceMax, Sub, Exp, ReduceSum, Log, Sub): finite where the softmax underflows to 0,
/// which `log(softmax)` is not. A row holding +∞, or only −∞, is NaN, as in ONNX
/// Runtime.
fn import_log(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let Rowed { x, axis, restore } = input_and_axis(n)?;
    let (shifted, log_sum) = log_softmax_parts(n, x, axis)?;
    finish(n, Op::Binary(Binary::Sub), vec![shifted, log_sum], restore)
}

/// The two terms of a LogSoftmax of `x` along `axis`, `x − m` and `log Σ exp(x − m)`
/// (`m` the maximum along the axis), added as steps of node `n`: their difference is
/// the LogSoftmax (the caller adds it, as a step or as the node's output).
pub(super) fn log_softmax_parts(
    n: &mut dyn OnnxNode,
    x: TensorId,
    axis: usize,
) -> Result<(TensorId, TensorId), OnnxError> {
    let along = |kind| {
        Op::Reduce(Reduce {
            kind,
            axes: vec![axis],
            keep_dims: true,
        })
    };
    let m = n.step("max", along(ReduceKind::Max), vec![x])?;
    let shifted = n.step("shifted", Op::Binary(Binary::Sub), vec![x, m])?;
    let e = n.step("exp", Op::Unary(Unary::Exp), vec![shifted])?;
    let sum = n.step("sum", along(ReduceKind::Sum), vec![e])?;
    let log_sum = n.step("log_sum", Op::Unary(Unary::Log), vec![sum])?;
    Ok((shifted, log_sum))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    #[test]
    fn rows_sum_to_one() {
        let x = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![0., 0., 1., 3.]).unwrap();
        let s = Softmax { axis: 1 }.reference(&[&x]);
        assert!((s[[0, 0]] - 0.5).abs() < 1e-15);
        assert!((s[[1, 1]] - 1.0 / (1.0 + (-2f64).exp())).abs() < 1e-15);
    }
}
