//! True (bool) where the input is NaN; ONNX's IsInf composed from comparisons.

use std::fmt;

use ndarray::ArrayD;
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::inline::truth;
use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, float};
use super::{Binary, Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// ONNX's IsNaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IsNaN;

impl OpDef for IsNaN {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        x.same()
    }

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

/// ONNX's IsNaN, and IsInf (`detect_positive`, `detect_negative`).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("IsInf", &[10, 20], import_is_inf),
    OnnxOp::new("IsNaN", &[9, 13, 20], |n| n.simple(Op::IsNaN)),
];

/// IsInf: `x > MAX` for `+∞` and `x < −MAX` for `−∞`, MAX the greatest finite value of
/// `x`'s type — finite constants, which every target's source can spell (WGSL has no
/// infinity literal), and false for NaN as ONNX wants. Both where both are detected.
fn import_is_inf(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dtype = n.tensor(x).dtype;
    if !dtype.is_float() {
        return Err(n.err(format!(
            "input 0 is {dtype}: IsInf takes float tensors (an integer is never infinite)"
        )));
    }
    let positive = n.flag("detect_positive", true)?;
    let negative = n.flag("detect_negative", true)?;
    let max = if dtype == DType::F16 {
        f32::from(half::f16::MAX)
    } else {
        f32::MAX
    };
    let above = n.add_constant("max", vec![], vec![max], dtype);
    let below = n.add_constant("lowest", vec![], vec![-max], dtype);
    match (positive, negative) {
        (true, true) => {
            let p = n.step("positive", Op::Binary(Binary::Greater), vec![x, above])?;
            let m = n.step("negative", Op::Binary(Binary::Less), vec![x, below])?;
            n.emit(Op::Binary(Binary::Or), vec![p, m])
        }
        (true, false) => n.emit(Op::Binary(Binary::Greater), vec![x, above]),
        (false, true) => n.emit(Op::Binary(Binary::Less), vec![x, below]),
        // Nothing detected: false everywhere (x > x is false, NaN included).
        (false, false) => n.emit(Op::Binary(Binary::Greater), vec![x, x]),
    }
}
