//! Inference batch normalization over channel axis 1: `x`, `scale`, `bias`, `mean`,
//! `var` (each `[C]`): `(x − mean) / sqrt(var + epsilon) · scale + bias`. Folded into the
//! convolution before it by a pass where it can be; otherwise elementwise.

use std::fmt;

use ndarray::{ArrayD, Axis};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, epsilon, same_dtype};
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// A batch normalization's attribute.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchNorm {
    pub epsilon: f64,
}

impl OpDef for BatchNorm {
    fn name(&self) -> &'static str {
        "BatchNormalization"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(epsilon={:e})", self.epsilon)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 5, 5)?;
        epsilon(self.epsilon)?;
        let x = inputs[0];
        if x.shape.len() < 2 {
            return Err(format!(
                "input 0 `{}` has rank {}, not at least 2",
                x.name,
                x.shape.len()
            ));
        }
        let c = x.shape[1];
        for (i, t) in inputs.iter().enumerate().skip(1) {
            if t.shape != [c] {
                return Err(format!(
                    "input {i} `{}` has shape {:?}, not [{c}] (the channels of `{}`)",
                    t.name, t.shape, x.name
                ));
            }
        }
        same_dtype(inputs)?;
        Ok((x.shape.clone(), x.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let c = x[0].shape()[1];
        let mut out = x[0].clone();
        for ch in 0..c {
            let (scale, bias, mean, var) = (x[1][[ch]], x[2][[ch]], x[3][[ch]], x[4][[ch]]);
            let k = scale / (var + self.epsilon).sqrt();
            out.index_axis_mut(Axis(1), ch)
                .mapv_inplace(|v| (v - mean) * k + bias);
        }
        out
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::FirstInput)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let c = [idx[1].clone()];
        let (scale, bias, mean, var) = (
            x.input(1, &c),
            x.input(2, &c),
            x.input(3, &c),
            x.input(4, &c),
        );
        Some((x.input(0, idx) - mean) * scale * te::rsqrt(var + self.epsilon as f32) + bias)
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.float("epsilon", self.epsilon);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's BatchNormalization, inference only (opset 7's `spatial` at its default, 1).
pub(super) const ONNX: &[OnnxOp] = &[OnnxOp::new("BatchNormalization", &[7, 9, 14, 15], import)];

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    if n.opset() < 9 && !n.flag("spatial", true)? {
        return Err(n.attr_err(
            "spatial",
            "is 0: weft imports batch normalization with one mean per channel only",
        ));
    }
    if n.flag("training_mode", false)? {
        return Err(n.attr_err(
            "training_mode",
            "is 1: weft imports inference batch normalization only",
        ));
    }
    n.refuse_used_outputs(1, "a running statistic of training")?;
    let epsilon = n.float("epsilon", 1e-5)?;
    let inputs = (0..5).map(|i| n.data(i)).collect::<Result<Vec<_>, _>>()?;
    n.emit(Op::BatchNorm(BatchNorm { epsilon }), inputs)
}
