//! Inputs joined along an axis (every other dimension equal). Where each input is a
//! group's output read by nothing else, those groups write into its slices and it runs
//! no kernel (the partition's views).

use std::fmt;

use ndarray::{ArrayD, Axis};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, same_type};
use super::{ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// A Concat's axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Concat {
    pub axis: usize,
}

impl OpDef for Concat {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        use super::symbolic::Carry;
        if (0..x.inputs.len()).any(|i| x.on(i, self.axis)) {
            return Carry::Refused(format!(
                "it joins along axis {}, the symbolic dimension: the rows past n of one input would lie before the next input's",
                self.axis
            ));
        }
        x.elementwise()
    }

    fn name(&self) -> &'static str {
        "Concat"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(axis={})", self.axis)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let axis = self.axis;
        arity(inputs, 1, usize::MAX)?;
        same_type(inputs)?;
        let first = &inputs[0].shape;
        if axis >= first.len() {
            return Err(format!(
                "axis {axis} is out of range for rank {}",
                first.len()
            ));
        }
        let mut shape = first.clone();
        shape[axis] = 0;
        for (i, t) in inputs.iter().enumerate() {
            let same_rank = t.shape.len() == first.len();
            let same_rest = same_rank
                && t.shape
                    .iter()
                    .zip(first)
                    .enumerate()
                    .all(|(d, (a, b))| d == axis || a == b);
            if !same_rest {
                return Err(format!(
                    "input {i} `{}` has shape {:?}; every input must match {:?} except along axis {axis}",
                    t.name, t.shape, first
                ));
            }
            shape[axis] += t.shape[axis];
        }
        Ok((shape, inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let views: Vec<_> = x.iter().map(|a| a.view()).collect();
        // Inference checked every shape but the axis; concatenate cannot fail here.
        ndarray::concatenate(Axis(self.axis), &views).expect("shapes checked by inference")
    }

    fn role(&self) -> Role<'_> {
        Role::Join { axis: self.axis }
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let axis = self.axis;
        // The inputs in order along `axis`: the last one is the fallback.
        let mut ends = Vec::new();
        let mut end = 0;
        for i in 0..x.input_count() {
            end += x.input_tensor(i).shape[axis];
            ends.push(end);
        }
        let mut value: Option<Expr> = None;
        for i in (0..x.input_count()).rev() {
            let start = if i == 0 { 0 } else { ends[i - 1] };
            let mut at = idx.to_vec();
            at[axis] = idx[axis].clone() - start as i64;
            let v = x.input(i, &at);
            value = Some(match value {
                None => v,
                Some(rest) => te::if_then_else(idx[axis].clone().lt(ends[i] as i64), v, rest),
            });
        }
        // Inference refuses a Concat of no inputs.
        value
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("axis", self.axis as i64);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's Concat.
pub(super) const ONNX: &[OnnxOp] = &[OnnxOp::new("Concat", &[4, 11, 13], import)];

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    if !n.has("axis") {
        return Err(n.attr_err("axis", "is required"));
    }
    let axis = n.int("axis", 0)?;
    let first = n.data(0)?;
    let rank = n.shape(first).len();
    let axis = n.axis("axis", axis, rank, false)?;
    let inputs = n.all_data()?;
    // An input of no elements adds nothing; where every input is empty the Concat is
    // too, and the import makes it a constant.
    let kept: Vec<_> = inputs
        .iter()
        .copied()
        .filter(|&t| n.shape(t).iter().product::<usize>() > 0)
        .collect();
    let inputs = if kept.is_empty() { inputs } else { kept };
    n.emit(Op::Concat(Concat { axis }), inputs)
}
