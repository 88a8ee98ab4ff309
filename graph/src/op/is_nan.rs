//! True (bool) where the input is NaN.

use std::fmt;

use ndarray::ArrayD;
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::inline::truth;
use super::onnx::OnnxOp;
use super::shapes::{arity, float};
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// ONNX's IsNaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsNaN;

impl OpDef for IsNaN {
    fn name(&self) -> &'static str {
        "IsNaN"
    }

    fn fmt_attrs(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        float(inputs[0], 0)?;
        Ok((inputs[0].shape.clone(), DType::Bool))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        x[0].mapv(|v| if v.is_nan() { 1.0 } else { 0.0 })
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let v = x.input(0, idx);
        Some(truth(v.clone().ne_(v)))
    }

    fn export(&self, _: &mut ExportNode<'_>) -> Result<(), String> {
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's IsNaN.
pub(super) const ONNX: &[OnnxOp] = &[OnnxOp::new("IsNaN", &[9, 13, 20], |n| n.simple(Op::IsNaN))];
