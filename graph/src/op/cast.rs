//! Each element converted to another type (to an integer: toward zero; to bool:
//! non-zero).

use std::fmt;

use ndarray::ArrayD;
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::inline::truth;
use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::arity;
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::{Tensor, TensorId};

/// A Cast's target type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cast {
    pub to: DType,
}

impl OpDef for Cast {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        x.same()
    }

    fn name(&self) -> &'static str {
        "Cast"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(to={})", self.to)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        if self.to == DType::U32 {
            return Err("weft's graphs hold f32, f16, i32 and bool tensors, not u32".into());
        }
        Ok((inputs[0].shape.clone(), self.to))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        x[0].mapv(|v| cast(v, self.to))
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let v = x.input(0, idx);
        // An f32 value converted to `to`, as an f32 value again: integers toward zero,
        // saturating, NaN to 0 (as the reference converts: an integer Div by zero, or a
        // float out of range, must not leave an infinity in an integer tensor); bools as
        // 1 or 0, f16 rounded.
        Some(match self.to {
            DType::F32 => v,
            DType::F16 => v.cast(DType::F16).cast(DType::F32),
            DType::I32 | DType::U32 => {
                let toward_zero = te::if_then_else(
                    v.clone().lt(0.0f32),
                    te::ceil(v.clone()),
                    te::floor(v.clone()),
                );
                let saturated = te::minimum(
                    te::maximum(toward_zero, Expr::f32(i32::MIN as f32)),
                    Expr::f32(i32::MAX as f32),
                );
                te::if_then_else(v.clone().eq_(v), saturated, Expr::f32(0.0))
            }
            DType::Bool => truth(v.ne_(0.0f32)),
        })
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.dtype("to", self.to);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Through
    }
}

/// `v` converted to `to` and back to f64.
pub fn cast(v: f64, to: DType) -> f64 {
    match to {
        DType::F32 => v as f32 as f64,
        DType::F16 => f64::from(half::f16::from_f64(v)),
        // Toward zero, saturating (as Rust's and the kernels' conversions do).
        DType::I32 | DType::U32 => {
            if v.is_nan() {
                0.0
            } else {
                v.trunc().clamp(i32::MIN as f64, i32::MAX as f64)
            }
        }
        DType::Bool => {
            if v != 0.0 {
                1.0
            } else {
                0.0
            }
        }
    }
}

/// ONNX's Cast and CastLike (an identity where the type does not change).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Cast", &[6, 9, 13, 19, 21, 23], import),
    OnnxOp::new("CastLike", &[15, 19, 21, 23], import_like),
];

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let code = n.int("to", 0)?;
    let to = n.element_type(code).ok_or_else(|| {
        n.attr_err(
            "to",
            format!(
                "{}: weft casts to float, float16, double, integers and bool",
                n.element_type_name(code)
            ),
        )
    })?;
    cast_to(n, x, to)
}

/// CastLike: input 0 converted to the element type of input 1 (`target_type`), whose
/// values are not read. Its `saturate` concerns only float 8 targets, which weft does not
/// hold (a graph tensor of such a type is refused where it is defined).
fn import_like(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let like = n.data(1)?;
    let to = n.tensor(like).dtype;
    cast_to(n, x, to)
}

/// `x` as `to`: a Cast, or an identity where `x` is of that type already.
fn cast_to(n: &mut dyn OnnxNode, x: TensorId, to: DType) -> Result<(), OnnxError> {
    let op = if n.tensor(x).dtype == to {
        Op::Identity
    } else {
        Op::Cast(Cast { to })
    };
    n.emit(op, vec![x])
}
