//! Dimensions permuted: output dimension `d` is input dimension `perm[d]`.

mod space;

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::arity;
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// A Transpose's permutation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transpose {
    pub perm: Vec<usize>,
}

impl OpDef for Transpose {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        // Output axis j is input axis perm[j].
        let moved = x.dims[0].iter().map(|d| {
            let axis = self
                .perm
                .iter()
                .position(|&p| p == d.axis)
                .unwrap_or(d.axis);
            super::symbolic::SymDim {
                axis,
                inner: d.inner,
            }
        });
        super::symbolic::Carry::Rows(moved.collect())
    }

    fn name(&self) -> &'static str {
        "Transpose"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(perm={:?})", self.perm)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let perm = &self.perm;
        arity(inputs, 1, 1)?;
        let s = &inputs[0].shape;
        let mut seen = vec![false; s.len()];
        if perm.len() != s.len() || perm.iter().any(|&p| p >= s.len()) {
            return Err(format!(
                "perm {perm:?} is not a permutation of the {} dimensions of `{}` {s:?}",
                s.len(),
                inputs[0].name
            ));
        }
        for &p in perm {
            if std::mem::replace(&mut seen[p], true) {
                return Err(format!("perm {perm:?} names dimension {p} twice"));
            }
        }
        Ok((perm.iter().map(|&p| s[p]).collect(), inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        x[0].view()
            .permuted_axes(IxDyn(&self.perm))
            .as_standard_layout()
            .into_owned()
    }

    fn role(&self) -> Role<'_> {
        // A permutation of the anchor's output, written where it belongs: the reader
        // then reads a stored tensor as it is (attention's `[b, h, s, d]` context stored
        // as `[b, s, h, d]` makes the output projection's operand a plain matrix).
        Role::Injective(Epilogue::Permute)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let mut at = vec![Expr::int(0); idx.len()];
        for (d, &p) in self.perm.iter().enumerate() {
            at[p] = idx[d].clone();
        }
        Some(x.input(0, &at))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.ints("perm", &self.perm);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's Transpose (no `perm`: the dimensions reversed).
/// DepthToSpace and SpaceToDepth are a Transpose between two Reshapes.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("DepthToSpace", &[1, 11, 13], space::import_depth_to_space),
    OnnxOp::new("SpaceToDepth", &[1, 13], space::import_space_to_depth),
    OnnxOp::new("Transpose", &[1, 13, 21, 23], import),
];

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let r = n.shape(x).len();
    let perm = match n.ints("perm")? {
        Some(p) => p
            .iter()
            .map(|&v| n.axis("perm", v, r, false))
            .collect::<Result<Vec<_>, _>>()?,
        None => (0..r).rev().collect(),
    };
    n.emit(Op::Transpose(Transpose { perm }), vec![x])
}
