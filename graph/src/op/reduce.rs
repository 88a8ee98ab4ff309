//! A sum, mean, maximum or minimum over `axes` (sorted), each kept with size 1 where
//! `keep_dims`: ONNX's ReduceSum, ReduceMean, ReduceMax, ReduceMin, run by the rows
//! template.

use std::fmt;

use ndarray::{ArrayD, Axis, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, float};
use super::{ExportNode, IndexUse, Inline, Op, OpDef, Reduction, Role};
use crate::tensor::Tensor;

/// What a [`Reduce`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceKind {
    Sum,
    Mean,
    Max,
    Min,
}

impl ReduceKind {
    /// ONNX's op name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "ReduceSum",
            ReduceKind::Mean => "ReduceMean",
            ReduceKind::Max => "ReduceMax",
            ReduceKind::Min => "ReduceMin",
        }
    }
}

/// A reduction over axes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reduce {
    pub kind: ReduceKind,
    pub axes: Vec<usize>,
    pub keep_dims: bool,
}

impl OpDef for Reduce {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(axes={:?}, keepdims={})",
            self.axes,
            u8::from(self.keep_dims)
        )
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let (axes, keep_dims) = (&self.axes, self.keep_dims);
        arity(inputs, 1, 1)?;
        float(inputs[0], 0)?;
        let s = &inputs[0].shape;
        if axes.windows(2).any(|w| w[0] >= w[1]) || axes.iter().any(|&a| a >= s.len()) {
            return Err(format!(
                "axes {axes:?} must be distinct dimensions of `{}` {s:?}, in order",
                inputs[0].name
            ));
        }
        let shape = s
            .iter()
            .enumerate()
            .filter_map(|(d, &n)| match (axes.contains(&d), keep_dims) {
                (false, _) => Some(n),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        Ok((shape, inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        reduce(x[0], self.kind, &self.axes, self.keep_dims)
    }

    fn role(&self) -> Role<'_> {
        Role::Reduction(Reduction::Reduce(self))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("keepdims", i64::from(self.keep_dims));
        // ReduceSum takes its axes as an input from opset 13; the others as an attribute
        // until opset 18.
        match self.kind {
            ReduceKind::Sum => {
                node.const_ints("axes", self.axes.iter().map(|&a| a as i64).collect())
            }
            ReduceKind::Mean | ReduceKind::Max | ReduceKind::Min => node.ints("axes", &self.axes),
        }
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

fn reduce(x: &ArrayD<f64>, kind: ReduceKind, axes: &[usize], keep_dims: bool) -> ArrayD<f64> {
    let mut out = x.clone();
    // Highest axis first, so the lower ones keep their numbers; each kept as size 1.
    for &a in axes.iter().rev() {
        let n = out.shape()[a] as f64;
        let r = match kind {
            ReduceKind::Sum => out.sum_axis(Axis(a)),
            ReduceKind::Mean => out.sum_axis(Axis(a)) / n,
            ReduceKind::Max => out.fold_axis(Axis(a), f64::NEG_INFINITY, |m, &v| m.max(v)),
            ReduceKind::Min => out.fold_axis(Axis(a), f64::INFINITY, |m, &v| m.min(v)),
        };
        out = r.insert_axis(Axis(a));
    }
    if keep_dims {
        return out;
    }
    let shape: Vec<usize> = x
        .shape()
        .iter()
        .enumerate()
        .filter(|(d, _)| !axes.contains(d))
        .map(|(_, &n)| n)
        .collect();
    out.into_shape_with_order(IxDyn(&shape))
        .expect("only size-1 axes dropped")
}

/// ONNX's ReduceMean, ReduceSum, ReduceMax and ReduceMin.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("ReduceMax", &[13, 18, 20], |n| import(n, ReduceKind::Max)),
    OnnxOp::new("ReduceMean", &[13, 18], |n| import(n, ReduceKind::Mean)),
    OnnxOp::new("ReduceMin", &[13, 18, 20], |n| import(n, ReduceKind::Min)),
    OnnxOp::new("ReduceSum", &[13], |n| import(n, ReduceKind::Sum)),
];

fn import(n: &mut dyn OnnxNode, kind: ReduceKind) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let r = n.shape(x).len();
    // Axes are an input from opset 13 for ReduceSum and 18 for the others.
    let axes = match n.ints("axes")? {
        Some(v) => Some(v),
        None => n.int_input(1, "axes")?,
    };
    let keep_dims = n.flag("keepdims", true)?;
    let mut axes: Vec<usize> = match axes {
        Some(v) if !v.is_empty() => v
            .iter()
            .map(|&v| n.axis("axes", v, r, false))
            .collect::<Result<_, _>>()?,
        Some(_) | None if n.flag("noop_with_empty_axes", false)? => {
            return n.emit(Op::Identity, vec![x]);
        }
        Some(_) | None => (0..r).collect(),
    };
    axes.sort_unstable();
    axes.dedup();
    n.emit(
        Op::Reduce(Reduce {
            kind,
            axes,
            keep_dims,
        }),
        vec![x],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_keep_or_drop_axes() {
        let x = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![0., 0., 1., 3.]).unwrap();
        let m = reduce(&x, ReduceKind::Mean, &[1], false);
        assert_eq!(m.iter().copied().collect::<Vec<_>>(), [0., 2.]);
        let m = reduce(&x, ReduceKind::Max, &[0, 1], true);
        assert_eq!(m.shape(), [1, 1]);
    }
}
