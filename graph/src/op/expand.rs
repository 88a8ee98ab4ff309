//! The input broadcast to a shape (NumPy's rules; the shape already combined with the
//! input's, as ONNX's Expand does).

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::inline::broadcast_index;
use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, broadcast};
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// An Expand's resolved output shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expand {
    pub shape: Vec<usize>,
}

impl OpDef for Expand {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        x.elementwise()
    }

    fn name(&self) -> &'static str {
        "Expand"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(shape={:?})", self.shape)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let shape = &self.shape;
        arity(inputs, 1, 1)?;
        match broadcast(&inputs[0].shape, shape) {
            Some(b) if &b == shape => Ok((shape.clone(), inputs[0].dtype)),
            Some(_) | None => Err(format!(
                "`{}` {:?} does not broadcast to {shape:?}",
                inputs[0].name, inputs[0].shape
            )),
        }
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        x[0].broadcast(IxDyn(&self.shape))
            .expect("checked by inference")
            .to_owned()
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        Some(x.input(0, &broadcast_index(&x.input_tensor(0).shape, idx)))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.const_ints("shape", self.shape.iter().map(|&d| d as i64).collect());
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's Expand (an identity where the shape adds nothing).
pub(super) const ONNX: &[OnnxOp] = &[OnnxOp::new("Expand", &[8, 13], import)];

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dims = n.shape(x);
    let spec = n
        .int_input(1, "shape")?
        .ok_or_else(|| n.err("input 1 (the shape) is missing"))?;
    let spec: Vec<usize> = spec.iter().map(|&d| d.max(0) as usize).collect();
    let shape = broadcast(&dims, &spec)
        .ok_or_else(|| n.err(format!("{dims:?} does not broadcast with {spec:?}")))?;
    let op = if shape == dims {
        Op::Identity
    } else {
        Op::Expand(Expand { shape })
    };
    n.emit(op, vec![x])
}
