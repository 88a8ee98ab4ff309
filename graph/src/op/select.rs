//! `Where`: `cond ? x : y` with broadcasting, a non-zero `cond` true; inputs `cond`, `x`,
//! `y`.

use std::fmt;

use ndarray::{ArrayD, IxDyn, Zip};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::inline::broadcast_index;
use super::onnx::OnnxOp;
use super::shapes::{arity, broadcast, same_type};
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// ONNX's Where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Where;

impl OpDef for Where {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        x.elementwise()
    }

    fn name(&self) -> &'static str {
        "Where"
    }

    fn fmt_attrs(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 3, 3)?;
        same_type(&inputs[1..])?;
        let xy = broadcast(&inputs[1].shape, &inputs[2].shape);
        let shape = xy.and_then(|xy| broadcast(&inputs[0].shape, &xy));
        let shape = shape.ok_or_else(|| {
            format!(
                "condition {:?}, x {:?} and y {:?} do not broadcast",
                inputs[0].shape, inputs[1].shape, inputs[2].shape
            )
        })?;
        Ok((shape, inputs[1].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let xy = broadcast(x[1].shape(), x[2].shape()).expect("checked by inference");
        let shape = broadcast(x[0].shape(), &xy).expect("checked by inference");
        let view = |a: &ArrayD<f64>| a.broadcast(IxDyn(&shape)).expect("checked").to_owned();
        let (c, a, b) = (view(x[0]), view(x[1]), view(x[2]));
        let mut out = ArrayD::zeros(IxDyn(&shape));
        Zip::from(&mut out)
            .and(&c)
            .and(&a)
            .and(&b)
            .for_each(|o, &c, &a, &b| *o = if c != 0.0 { a } else { b });
        out
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let bcast = |i: usize| broadcast_index(&x.input_tensor(i).shape, idx);
        Some(te::if_then_else(
            x.input(0, &bcast(0)).ne_(0.0f32),
            x.input(1, &bcast(1)),
            x.input(2, &bcast(2)),
        ))
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

/// ONNX's Where.
pub(super) const ONNX: &[OnnxOp] = &[OnnxOp::new("Where", &[9, 16], |n| n.simple(Op::Where))];
