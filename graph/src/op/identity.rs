//! The input unchanged (also inference Dropout). Removed by a pass where it can be.

use std::fmt;

use ndarray::ArrayD;
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::shapes::arity;
use super::{Epilogue, ExportNode, Inline, OpDef, Role};
use crate::tensor::Tensor;

/// The identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity;

impl OpDef for Identity {
    fn name(&self) -> &'static str {
        "Identity"
    }

    fn fmt_attrs(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        Ok((inputs[0].shape.clone(), inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        x[0].clone()
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Pointwise)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        Some(x.input(0, idx))
    }

    fn export(&self, _: &mut ExportNode<'_>) -> Result<(), String> {
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }
}
