//! [`TensorScatter`]: ONNX's TensorScatter (opset 24, `mode="linear"`), the KV cache's
//! update. `present = past`, then for every batch entry `b` the `s` rows of `update`
//! along `axis` written at rows `write_indices[b] .. write_indices[b] + s` of it. The
//! cache keeps its capacity (`past`'s extent along `axis`); only the new rows change.
//!
//! ONNX states it as a functional op that models an in-place update, and weft runs it in
//! place where it can (`crate::partition::in_place`): where `past` is a graph input nothing else reads,
//! the output lives in `past`'s buffer and the kernel runs over `update` only, storing
//! its rows at the position — a decode step writes one row per layer, never the whole
//! cache. Elsewhere it is an injective op like any other (`past` copied, the rows
//! selected in).
//!
//! A write index outside `[0, capacity − s]` is clamped into it (ONNX leaves it
//! undefined): no write leaves the cache. Callers that take positions from users (`weft
//! model generate`) refuse a position past the capacity before anything runs.

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::inline::clamped_index;
use super::onnx::OnnxOp;
use super::shapes::{arity, axis_of, integer};
use super::{ExportNode, IndexUse, Inline, OpDef, Role};
use crate::tensor::Tensor;

/// ONNX's TensorScatter, linear mode: inputs `past` `[batch, …, capacity, …]`, `update`
/// (the same shape but `s` along `axis`) and `write_indices` `[batch]` (integers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorScatter {
    /// The sequence axis (not the batch axis 0).
    pub axis: usize,
}

impl TensorScatter {
    /// The first row `write` (a write index) lands on, in `[0, capacity − rows]`.
    fn start(write: f64, capacity: usize, rows: usize) -> usize {
        let last = (capacity - rows) as f64;
        write.clamp(0.0, last) as usize
    }
}

impl OpDef for TensorScatter {
    fn name(&self) -> &'static str {
        "TensorScatter"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(axis={})", self.axis)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 3, 3)?;
        let (past, update, write) = (inputs[0], inputs[1], inputs[2]);
        axis_of(self.axis, past)?;
        if self.axis == 0 {
            return Err("axis 0 is the batch: the sequence axis must be another".into());
        }
        integer(write, 2)?;
        if update.dtype != past.dtype {
            return Err(format!(
                "input 1 `{}` is {}, the cache `{}` is {}",
                update.name, update.dtype, past.name, past.dtype
            ));
        }
        let fits = update.shape.len() == past.shape.len()
            && (0..past.shape.len()).all(|d| {
                if d == self.axis {
                    update.shape[d] <= past.shape[d]
                } else {
                    update.shape[d] == past.shape[d]
                }
            });
        if !fits {
            return Err(format!(
                "update `{}` {:?} must have the cache's shape {:?} but along axis {}, where it may be shorter",
                update.name, update.shape, past.shape, self.axis
            ));
        }
        if write.shape != [past.shape[0]] {
            return Err(format!(
                "write_indices `{}` {:?} must be one index per batch entry, [{}]",
                write.name, write.shape, past.shape[0]
            ));
        }
        Ok((past.shape.clone(), past.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let (past, update, write) = (x[0], x[1], x[2]);
        let (capacity, rows) = (past.shape()[self.axis], update.shape()[self.axis]);
        let mut out = past.clone();
        for (at, &v) in update.indexed_iter() {
            let mut to: Vec<usize> = (0..update.ndim()).map(|d| at[d]).collect();
            to[self.axis] += Self::start(write[IxDyn(&[to[0]])], capacity, rows);
            out[IxDyn(&to)] = v;
        }
        out
    }

    fn role(&self) -> Role<'_> {
        Role::Update(self)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        // The copy: `past` where no row of `update` lands, else that row.
        let capacity = x.input_tensor(0).shape[self.axis];
        let rows = x.input_tensor(1).shape[self.axis];
        let start = self.start_expr(x, &idx[0], capacity, rows);
        let r = idx[self.axis].clone() - start;
        let mut at = idx.to_vec();
        at[self.axis] = r.clone().max(0).min(rows as i64 - 1);
        let hit = Expr::all(vec![r.clone().ge(0), r.lt(rows as i64)]);
        Some(te::if_then_else(hit, x.input(1, &at), x.input(0, idx)))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("axis", self.axis as i64);
        node.needs_opset(24);
        Ok(())
    }

    fn macs(&self, inputs: &[&Tensor], _: &Tensor) -> f64 {
        inputs[1].numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        // Write indices are positions, clamped into the cache (module doc), not rows
        // ONNX bounds.
        IndexUse::Data
    }
}

impl TensorScatter {
    /// The first row batch entry `b` writes, as the kernels compute it: the write index
    /// read at `[b]`, clamped into `[0, capacity − rows]`.
    pub fn start_expr(&self, x: &dyn Inline, b: &Expr, capacity: usize, rows: usize) -> Expr {
        clamped_index(x.input(2, std::slice::from_ref(b)), capacity - rows + 1)
    }
}

/// Not imported: weft reads ONNX files up to opset 23, and TensorScatter came with 24.
pub(super) const ONNX: &[OnnxOp] = &[];

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(shape: &[usize], v: Vec<f64>) -> ArrayD<f64> {
        ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
    }

    #[test]
    fn rows_land_at_each_batch_entrys_position_and_nothing_else_changes() {
        // Cache [2, 4, 1] of zeros, two rows per entry, at 1 and (clamped) 2.
        let past = arr(&[2, 4, 1], vec![0.0; 8]);
        let update = arr(&[2, 2, 1], vec![1., 2., 3., 4.]);
        let write = arr(&[2], vec![1., 9.]);
        let got = TensorScatter { axis: 1 }.reference(&[&past, &update, &write]);
        assert_eq!(
            got.iter().copied().collect::<Vec<_>>(),
            vec![0., 1., 2., 0., 0., 0., 3., 4.]
        );
    }

    #[test]
    fn shapes_that_do_not_make_an_update_are_refused() {
        use crate::GraphBuilder;
        use crate::op::Op;
        let mut b = GraphBuilder::new("t");
        let past = b.input("past", &[1, 2, 8, 4], DType::F32);
        let long = b.input("long", &[1, 2, 9, 4], DType::F32);
        let at = b.input("at", &[1], DType::I32);
        let op = Op::TensorScatter(TensorScatter { axis: 2 });
        let err = b.node("s", op.clone(), &[past, long, at]).unwrap_err();
        assert!(err.to_string().contains("may be shorter"), "{err}");
        let wrong = b.input("wrong", &[2], DType::I32);
        let one = b.input("one", &[1, 2, 1, 4], DType::F32);
        let err = b.node("s", op, &[past, one, wrong]).unwrap_err();
        assert!(
            err.to_string().contains("one index per batch entry"),
            "{err}"
        );
    }
}
