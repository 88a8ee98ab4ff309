//! Rotary position embedding in the rotate-half form Hugging Face's Llama family writes:
//! `y = x · cos + rotate_half(x) · sin` over the last axis, where `rotate_half(x)` is
//! `(−x₂, x₁)` for `x`'s halves `(x₁, x₂)`; inputs `x` `[..., d]` (d even) and `cos`,
//! `sin` broadcasting to it. Made by `passes::recognize_rotary` from the `Slice`, `Neg`,
//! `Concat`, `Mul`, `Add` chain exporters write.
//!
//! Why an op of its own: as that chain, `rotate_half`'s `Concat` is a join (never
//! computed inside its reader) whose two `Slice`d halves are kernels of their own
//! writing into its buffer — two launches for the query and two for the key in every
//! layer of a decode step, where each costs more than the step's work on it. One
//! injective op is computed inline where it is read: in the attention's loads of the
//! queries, in the cache write of the keys.

use std::fmt;

use ndarray::{ArrayD, Axis, IxDyn, Zip};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::inline::broadcast_index;
use super::shapes::{arity, broadcast, float, same_dtype};
use super::{Epilogue, ExportNode, IndexUse, Inline, OpDef, Role};
use crate::tensor::Tensor;

/// `x · cos + rotate_half(x) · sin` over the last axis (inputs `x`, `cos`, `sin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotary;

impl OpDef for Rotary {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        // Elementwise but along the last axis, whose halves it swaps.
        let last = x.output.shape.len() - 1;
        match x.elementwise() {
            super::symbolic::Carry::Rows(dims) if dims.iter().any(|d| d.axis == last) => {
                super::symbolic::Carry::Refused(
                    "it rotates along its last axis, which holds the symbolic dimension".into(),
                )
            }
            carry => carry,
        }
    }

    fn name(&self) -> &'static str {
        "Rotary"
    }

    fn fmt_attrs(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 3, 3)?;
        same_dtype(inputs)?;
        float(inputs[0], 0)?;
        let x = &inputs[0].shape;
        if x.last().is_none_or(|&d| d % 2 != 0) {
            return Err(format!(
                "`{}` {x:?}: the last dimension must be even (two halves rotated)",
                inputs[0].name
            ));
        }
        for t in &inputs[1..] {
            if t.shape.len() > x.len() || broadcast(&t.shape, x).as_deref() != Some(&x[..]) {
                return Err(format!(
                    "`{}` {:?} does not broadcast to `{}` {x:?}",
                    t.name, t.shape, inputs[0].name
                ));
            }
        }
        Ok((x.clone(), inputs[0].dtype))
    }

    fn reference(&self, inputs: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let x = inputs[0];
        let shape = IxDyn(x.shape());
        let cos = inputs[1]
            .broadcast(shape.clone())
            .expect("checked by inference");
        let sin = inputs[2].broadcast(shape).expect("checked by inference");
        let last = Axis(x.ndim() - 1);
        let half = x.len_of(last) / 2;
        // rotate_half(x): the second half negated, then the first.
        let mut rotated = x.clone();
        let (x1, x2) = x.view().split_at(last, half);
        let (mut r1, mut r2) = rotated.view_mut().split_at(last, half);
        r1.zip_mut_with(&x2, |r, &v| *r = -v);
        r2.assign(&x1);
        let mut out = ArrayD::zeros(x.raw_dim());
        Zip::from(&mut out)
            .and(x)
            .and(&rotated)
            .and(&cos)
            .and(&sin)
            .for_each(|o, &x, &r, &c, &s| *o = x * c + r * s);
        out
    }

    fn role(&self) -> Role<'_> {
        // An element reads its partner in the other half: never an anchor's epilogue
        // (a store computes one element), always inline where it is read.
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let shape = &x.input_tensor(0).shape;
        let r = shape.len();
        let half = (shape[r - 1] / 2) as i64;
        let i = idx[r - 1].clone();
        let at = |last: Expr| {
            let mut at = idx.to_vec();
            at[r - 1] = last;
            x.input(0, &at)
        };
        let first = i.clone().lt(half);
        let rotated = te::if_then_else(first, -at(i.clone() + half), at(i.clone() - half));
        let bcast = |k: usize| broadcast_index(&x.input_tensor(k).shape, idx);
        Some(at(i) * x.input(1, &bcast(1)) + rotated * x.input(2, &bcast(2)))
    }

    fn export(&self, _: &mut ExportNode<'_>) -> Result<(), String> {
        // ONNX's RotaryEmbedding takes half-width angle caches, not these full-width
        // tables: the graph is exported as it was before the pass that made this node.
        Err(
            "no ONNX op computes the rotate-half embedding with full-width cos and sin \
             tables (export the graph before `recognize rotary`)"
                .to_string(),
        )
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}
