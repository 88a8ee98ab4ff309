//! `min(max(x, min), max)`: ONNX's Clip with constant bounds (ReLU6 is `[0, 6]`); and
//! ONNX's Shrink, composed from comparisons and a Where.

use std::fmt;

use ndarray::ArrayD;
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::binary::Binary;
use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, float};
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// A Clip's bounds (either may be infinite).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clip {
    pub min: f64,
    pub max: f64,
}

impl OpDef for Clip {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        x.same()
    }

    fn name(&self) -> &'static str {
        "Clip"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(min={}, max={})", self.min, self.max)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        // Integers too (DeBERTa clamps its int64 relative positions): bounds and values
        // exact in the f32 a kernel computes in below 2²⁴, stored back as integers.
        if inputs[0].dtype != DType::I32 {
            float(inputs[0], 0)?;
        }
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

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's Clip: bounds are attributes before opset 11 and optional inputs since. An
/// absent input means unbounded; an absent attribute (opset 6) the lowest or greatest
/// finite float, as ONNX Clip-6 defines it (so ±∞ clips to ±3.4·10³⁸ there).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Clip", &[6, 11, 12, 13], import),
    OnnxOp::new("Shrink", &[9], import_shrink),
];

/// Shrink (`lambd` 0.5, `bias` 0 unless given): `x + bias` where `x < −lambd`,
/// `x − bias` where `x > lambd`, 0 between.
fn import_shrink(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dtype = n.tensor(x).dtype;
    let lambd = n.float("lambd", 0.5)? as f32;
    let bias = n.float("bias", 0.0)? as f32;
    let c = |n: &mut dyn OnnxNode, tag: &str, v: f32| n.add_constant(tag, vec![], vec![v], dtype);
    let (low, high) = (c(n, "low", -lambd), c(n, "high", lambd));
    let (b, zero) = (c(n, "bias", bias), c(n, "zero", 0.0));
    let below = n.step("below", Op::Binary(Binary::Less), vec![x, low])?;
    let above = n.step("above", Op::Binary(Binary::Greater), vec![x, high])?;
    let raised = n.step("raised", Op::Binary(Binary::Add), vec![x, b])?;
    let lowered = n.step("lowered", Op::Binary(Binary::Sub), vec![x, b])?;
    let outer = n.step("outer", Op::Where, vec![above, lowered, zero])?;
    n.emit(Op::Where, vec![below, raised, outer])
}

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let (low, high) = if n.opset() < 11 {
        (f32::MIN, f32::MAX)
    } else {
        (f32::NEG_INFINITY, f32::INFINITY)
    };
    let mut bounds = [n.float("min", low)?, n.float("max", high)?];
    if n.is_computed(1) || n.is_computed(2) {
        // A bound computed at run time: max(x, min) then min(·, max), which is also
        // ONNX's answer (max) where min > max.
        let mut acc = x;
        let steps: Vec<(usize, Binary)> = [(1, Binary::Max), (2, Binary::Min)]
            .into_iter()
            .filter(|&(i, _)| n.has_input(i))
            .collect();
        for (k, &(i, f)) in steps.iter().enumerate() {
            let bound = n.data(i)?;
            if k + 1 == steps.len() {
                return n.emit(Op::Binary(f), vec![acc, bound]);
            }
            acc = n.step(f.name(), Op::Binary(f), vec![acc, bound])?;
        }
    }
    for (i, bound) in [1, 2].into_iter().zip(&mut bounds) {
        if let Some(c) = n.constant(i)? {
            *bound = c.scalar().ok_or_else(|| {
                n.err(format!(
                    "input {i} has shape {:?}, not a scalar bound",
                    c.dims
                ))
            })?;
        }
    }
    let [min, max] = bounds;
    n.emit(Op::Clip(Clip { min, max }), vec![x])
}
