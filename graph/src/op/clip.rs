//! `min(max(x, min), max)`: ONNX's Clip with constant bounds (ReLU6 is `[0, 6]`).

use std::fmt;

use ndarray::ArrayD;
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::shapes::{arity, float};
use super::{Epilogue, ExportNode, Inline, OpDef, Role};
use crate::tensor::Tensor;

/// A Clip's bounds (either may be infinite).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clip {
    pub min: f64,
    pub max: f64,
}

impl OpDef for Clip {
    fn name(&self) -> &'static str {
        "Clip"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(min={}, max={})", self.min, self.max)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        float(inputs[0], 0)?;
        Ok((inputs[0].shape.clone(), inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        x[0].mapv(|v| v.max(self.min).min(self.max))
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Pointwise)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        Some(te::minimum(
            te::maximum(x.input(0, idx), self.min as f32),
            self.max as f32,
        ))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        // Bounds are inputs since opset 11, in the input's element type.
        node.const_scalar("min", self.min);
        node.const_scalar("max", self.max);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }
}
