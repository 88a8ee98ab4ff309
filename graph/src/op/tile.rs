//! ONNX's Tile: the input repeated `repeats[d]` times along each dimension `d`
//! (`numpy.tile` with one repeat per dimension): output element `i` reads input element
//! `i mod n` in each dimension of `n` elements.

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::onnx::{MAX_WINDOW, OnnxError, OnnxNode, OnnxOp};
use super::shapes::arity;
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// How many times each dimension is repeated (at least once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tile {
    pub repeats: Vec<usize>,
}

impl OpDef for Tile {
    fn name(&self) -> &'static str {
        "Tile"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(repeats={:?})", self.repeats)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        let x = inputs[0];
        if self.repeats.len() != x.shape.len() || self.repeats.contains(&0) {
            return Err(format!(
                "repeats {:?} must give a positive count for each of the {} dimensions of `{}` {:?}",
                self.repeats,
                x.shape.len(),
                x.name,
                x.shape
            ));
        }
        let shape = x.shape.iter().zip(&self.repeats).map(|(n, k)| n * k);
        Ok((shape.collect(), x.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let dims = x[0].shape();
        let shape: Vec<usize> = dims.iter().zip(&self.repeats).map(|(n, k)| n * k).collect();
        ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
            let at: Vec<usize> = (0..dims.len()).map(|d| ix[d] % dims[d]).collect();
            x[0][IxDyn(&at)]
        })
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let dims = &x.input_tensor(0).shape;
        let at: Vec<Expr> = idx
            .iter()
            .zip(dims.iter().zip(&self.repeats))
            .map(|(i, (&n, &k))| match (n, k) {
                (1, _) => Expr::int(0),
                (_, 1) => i.clone(),
                (n, _) => i.clone().floormod(n as i64),
            })
            .collect();
        Some(x.input(0, &at))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.const_ints("repeats", self.repeats.iter().map(|&k| k as i64).collect());
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Through
    }
}

/// ONNX's Tile, its `repeats` a constant input.
pub(super) const ONNX: &[OnnxOp] = &[OnnxOp::new("Tile", &[6, 13], import)];

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dims = n.shape(x);
    let repeats = n
        .int_input(1, "repeats")?
        .ok_or_else(|| n.err("input 1 (repeats) is missing"))?;
    if repeats.len() != dims.len() {
        return Err(n.err(format!(
            "input 1 (repeats) {repeats:?} must hold one count for each of the {} dimensions of {dims:?}",
            dims.len()
        )));
    }
    if repeats.contains(&0) {
        return Err(n.err(format!(
            "repeats {repeats:?} has a 0: weft's tensors have no empty dimension"
        )));
    }
    let repeats = n.positive("repeats", &repeats).map_err(|_| {
        n.err(format!(
            "repeats {repeats:?} must be counts in 1..={MAX_WINDOW}"
        ))
    })?;
    let op = if repeats.iter().all(|&k| k == 1) {
        Op::Identity
    } else {
        Op::Tile(Tile { repeats })
    };
    n.emit(op, vec![x])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_repeat_each_dimension() {
        let x = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1., 2., 3., 4.]).unwrap();
        let t = Tile {
            repeats: vec![2, 3],
        }
        .reference(&[&x]);
        assert_eq!(t.shape(), [4, 6]);
        assert_eq!(
            t.index_axis(ndarray::Axis(0), 3)
                .iter()
                .copied()
                .collect::<Vec<_>>(),
            [3., 4., 3., 4., 3., 4.]
        );
    }
}
