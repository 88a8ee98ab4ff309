//! Layer normalization over the dimensions from `axis` on: `(x − mean) /
//! sqrt(var + epsilon) · scale (+ bias)`; inputs `x`, `scale`, optional `bias` (each
//! broadcast to the normalized dimensions). A normalization of rows, run by the rows
//! template; a pass makes the decomposed form exporters write into one node.

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, axis_of, broadcast, epsilon, float};
use super::{ExportNode, IndexUse, Inline, Op, OpDef, Reduction, Role, Rows};
use crate::tensor::Tensor;

/// A layer norm's first normalized axis and epsilon.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerNorm {
    pub axis: usize,
    pub epsilon: f64,
}

impl OpDef for LayerNorm {
    fn name(&self) -> &'static str {
        "LayerNormalization"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(axis={}, epsilon={:e})", self.axis, self.epsilon)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 2, 3)?;
        float(inputs[0], 0)?;
        let x = inputs[0];
        axis_of(self.axis, x)?;
        epsilon(self.epsilon)?;
        let normalized = &x.shape[self.axis..];
        for (i, t) in inputs.iter().enumerate().skip(1) {
            float(t, i)?;
            if broadcast(&t.shape, normalized).as_deref() != Some(normalized) {
                return Err(format!(
                    "input {i} `{}` {:?} does not broadcast to the normalized dimensions {normalized:?}",
                    t.name, t.shape
                ));
            }
        }
        Ok((x.shape.clone(), x.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        layer_norm(x, self.axis, self.epsilon)
    }

    fn role(&self) -> Role<'_> {
        Role::Reduction(Reduction::Rows(Rows::LayerNorm(self)))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("axis", self.axis as i64);
        node.float("epsilon", self.epsilon);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

fn layer_norm(x: &[&ArrayD<f64>], axis: usize, epsilon: f64) -> ArrayD<f64> {
    let shape = x[0].shape().to_vec();
    let normalized = &shape[axis..];
    let inner: usize = normalized.iter().product();
    let outer: usize = shape[..axis].iter().product();
    let flat = |a: &ArrayD<f64>| -> Vec<f64> {
        a.broadcast(IxDyn(normalized))
            .expect("checked by inference")
            .iter()
            .copied()
            .collect()
    };
    let scale = flat(x[1]);
    let bias = x.get(2).map(|b| flat(b));
    let data: Vec<f64> = x[0].iter().copied().collect();
    let mut out = Vec::with_capacity(data.len());
    for r in 0..outer {
        let row = &data[r * inner..(r + 1) * inner];
        let mean = row.iter().sum::<f64>() / inner as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / inner as f64;
        let k = 1.0 / (var + epsilon).sqrt();
        for (j, v) in row.iter().enumerate() {
            let b = bias.as_ref().map_or(0.0, |b| b[j]);
            out.push((v - mean) * k * scale[j] + b);
        }
    }
    ArrayD::from_shape_vec(IxDyn(&shape), out).expect("same element count")
}

/// ONNX's LayerNormalization, inference only.
pub(super) const ONNX: &[OnnxOp] = &[OnnxOp::new("LayerNormalization", &[17], import)];

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    n.refuse_used_outputs(1, "a statistic of training")?;
    let x = n.data(0)?;
    let r = n.shape(x).len();
    let axis = n.int("axis", -1)?;
    let axis = n.axis("axis", axis, r, false)?;
    let epsilon = n.float("epsilon", 1e-5)?;
    let mut inputs = vec![x, n.data(1)?];
    inputs.extend(n.opt_data(2)?);
    n.emit(Op::LayerNorm(LayerNorm { axis, epsilon }), inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_rows() {
        let y = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![0., 2., 1., 3.]).unwrap();
        let scale = ArrayD::from_shape_vec(IxDyn(&[2]), vec![1., 2.]).unwrap();
        let ln = layer_norm(&[&y, &scale], 1, 0.0);
        assert_eq!(ln.iter().copied().collect::<Vec<_>>(), [-1., 2., -1., 2.]);
    }
}
