//! ONNX's Trilu: the upper or lower triangle of the last two dimensions of `x`
//! `[..., N, M]`, the rest zero. Upper keeps `x[..., i, j]` where `j − i ≥ k`, lower where
//! `j − i ≤ k` (`k` is 0, the main diagonal, unless given). Exporters write it for
//! causal masks (`torch.triu`/`tril`).

use std::fmt;

use ndarray::{ArrayD, Dimension};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::arity;
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// Which triangle, from which diagonal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trilu {
    /// The upper triangle (`j − i ≥ k`), else the lower (`j − i ≤ k`).
    pub upper: bool,
    /// The diagonal: 0 the main one, positive above it, negative below.
    pub k: i64,
}

impl Trilu {
    /// Whether element `(i, j)` of a matrix is kept.
    fn keeps(&self, i: usize, j: usize) -> bool {
        let d = j as i64 - i as i64;
        if self.upper { d >= self.k } else { d <= self.k }
    }
}

impl OpDef for Trilu {
    fn name(&self) -> &'static str {
        "Trilu"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let which = if self.upper { "upper" } else { "lower" };
        write!(f, "({which}, k={})", self.k)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        let x = inputs[0];
        if x.shape.len() < 2 {
            return Err(format!(
                "input 0 `{}` has shape {:?}: Trilu takes matrices or batches of them",
                x.name, x.shape
            ));
        }
        Ok((x.shape.clone(), x.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let mut out = x[0].clone();
        let r = out.ndim();
        for (ix, v) in out.indexed_iter_mut() {
            let ix = ix.slice();
            if !self.keeps(ix[r - 2], ix[r - 1]) {
                *v = 0.0;
            }
        }
        out
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let r = idx.len();
        let d = idx[r - 1].clone() - idx[r - 2].clone();
        let keep = if self.upper {
            d.ge(self.k)
        } else {
            d.le(self.k)
        };
        Some(te::if_then_else(keep, x.input(0, idx), Expr::f32(0.0)))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("upper", i64::from(self.upper));
        node.const_ints("k", vec![self.k]);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's Trilu (opset 14 on), its `k` a constant.
pub(super) const ONNX: &[OnnxOp] = &[OnnxOp::new("Trilu", &[14], import)];

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let upper = n.flag("upper", true)?;
    let k = match n.int_input(1, "k")? {
        None => 0,
        Some(v) if v.len() == 1 => v[0],
        Some(v) => return Err(n.err(format!("input 1 (k) holds {v:?}, not one value"))),
    };
    let x = n.data(0)?;
    n.emit(Op::Trilu(Trilu { upper, k }), vec![x])
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    #[test]
    fn triangles_from_any_diagonal() {
        let x = ArrayD::from_shape_fn(IxDyn(&[2, 3, 4]), |ix| (ix[1] * 4 + ix[2] + 1) as f64);
        let upper = Trilu { upper: true, k: 1 }.reference(&[&x]);
        // Row 1 of each matrix keeps columns 2 and 3 (j − 1 ≥ 1).
        assert_eq!(upper[[1, 1, 1]], 0.0);
        assert_eq!(upper[[1, 1, 2]], 7.0);
        let lower = Trilu {
            upper: false,
            k: -1,
        }
        .reference(&[&x]);
        // Row 2 keeps columns 0 and 1 (j − 2 ≤ −1); row 0 keeps nothing.
        assert_eq!(lower[[0, 2, 1]], 10.0);
        assert_eq!(lower[[0, 2, 2]], 0.0);
        assert!(
            lower
                .slice(ndarray::s![.., 0, ..])
                .iter()
                .all(|&v| v == 0.0)
        );
    }

    #[test]
    fn matrices_only() {
        let t = Tensor {
            name: "v".into(),
            shape: vec![5],
            dtype: DType::F32,
            layout: crate::tensor::Layout::RowMajor,
            data: None,
        };
        let err = Trilu { upper: true, k: 0 }.infer(&[&t]).unwrap_err();
        assert!(err.contains("matrices"), "{err}");
    }
}
