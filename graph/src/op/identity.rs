//! The input unchanged (also inference Dropout). Removed by a pass where it can be.

use std::fmt;

use ndarray::ArrayD;
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::arity;
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// The identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity;

impl OpDef for Identity {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        x.same()
    }

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

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Through
    }
}

/// ONNX's Identity, and inference Dropout (an identity).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Dropout", &[7, 10, 12, 13, 22], import_dropout),
    OnnxOp::new("Identity", &[1, 13, 14, 16, 19, 21, 23], |n| {
        n.simple(Op::Identity)
    }),
];

fn import_dropout(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    // The ratio (an attribute before opset 12, input 1 from) does not matter in
    // inference; input 2 (from 12) must say inference.
    if let Some(mode) = n.constant(2)?
        && mode.scalar() != Some(0.0)
    {
        return Err(
            n.err("training_mode is true: weft imports inference Dropout (an identity) only")
        );
    }
    n.refuse_used_outputs(1, "the mask")?;
    let x = n.data(0)?;
    n.emit(Op::Identity, vec![x])
}
