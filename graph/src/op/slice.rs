//! A strided window: along dimension `d`, input elements `starts[d] + i·steps[d]` for `i`
//! below `sizes[d]` (the output's shape; ONNX's Slice resolved, and Split's parts).

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::shapes::arity;
use super::{Epilogue, ExportNode, Inline, OpDef, Role};
use crate::tensor::Tensor;

/// A resolved Slice: one start, step and size per dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    pub starts: Vec<usize>,
    pub steps: Vec<i64>,
    pub sizes: Vec<usize>,
}

impl OpDef for Slice {
    fn name(&self) -> &'static str {
        "Slice"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(starts={:?}, steps={:?}, sizes={:?})",
            self.starts, self.steps, self.sizes
        )
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let Slice {
            starts,
            steps,
            sizes,
        } = self;
        arity(inputs, 1, 1)?;
        let s = &inputs[0].shape;
        if starts.len() != s.len() || steps.len() != s.len() || sizes.len() != s.len() {
            return Err(format!(
                "starts {starts:?}, steps {steps:?} and sizes {sizes:?} must each give the {} dimensions of `{}` {s:?}",
                s.len(),
                inputs[0].name
            ));
        }
        for d in 0..s.len() {
            if sizes[d] == 0 {
                continue;
            }
            let last = starts[d] as i64 + (sizes[d] as i64 - 1) * steps[d];
            if steps[d] == 0 || starts[d] >= s[d] || last < 0 || last >= s[d] as i64 {
                return Err(format!(
                    "dimension {d}: {} elements from {} by {} leave [0, {})",
                    sizes[d], starts[d], steps[d], s[d]
                ));
            }
        }
        Ok((sizes.clone(), inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let sizes = &self.sizes;
        ArrayD::from_shape_fn(IxDyn(sizes), |ix| {
            let at: Vec<usize> = (0..sizes.len())
                .map(|d| (self.starts[d] as i64 + ix[d] as i64 * self.steps[d]) as usize)
                .collect();
            x[0][IxDyn(&at)]
        })
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let at: Vec<Expr> = idx
            .iter()
            .enumerate()
            .map(|(d, i)| match (self.starts[d] as i64, self.steps[d]) {
                (0, 1) => i.clone(),
                (s, 1) => i.clone() + s,
                (s, k) => i.clone() * k + s,
            })
            .collect();
        Some(x.input(0, &at))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        let dims = node.inputs[0].shape.clone();
        let starts: Vec<i64> = self.starts.iter().map(|&s| s as i64).collect();
        // One past the last element read; below 0 for a negative step that reads
        // element 0 (ONNX counts a negative end from the back, so that is written as
        // −n − 1, which clamps to "before 0").
        let ends: Vec<i64> = (0..dims.len())
            .map(|d| {
                let end = starts[d] + self.sizes[d] as i64 * self.steps[d];
                if end < 0 { -(dims[d] as i64) - 1 } else { end }
            })
            .collect();
        let axes: Vec<i64> = (0..dims.len() as i64).collect();
        node.const_ints("starts", starts);
        node.const_ints("ends", ends);
        node.const_ints("axes", axes);
        node.const_ints("steps", self.steps.clone());
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }
}
