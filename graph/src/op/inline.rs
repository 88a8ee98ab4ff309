//! What an injective op's expression reads ([`Inline`]): the lowering implements it over
//! a group's values, and each op's [`crate::op::OpDef::inline`] builds its output's
//! value from it — a load where an input is stored, the producer's own expression where
//! the group computes the input inline too.
//!
//! Values are in logical indices (the graph's shapes) and in f32 (bools are 1 or 0).

use weft_ir::prelude::*;

use crate::tensor::Tensor;

/// An injective node's inputs and output, as its expression sees them.
pub trait Inline {
    /// The value of input `i` at logical index `idx` (one index per dimension of that
    /// input), in f32.
    fn input(&self, i: usize, idx: &[Expr]) -> Expr;

    /// How many inputs the node reads.
    fn input_count(&self) -> usize;

    /// Input `i`'s tensor: its shape, dtype and (for a constant) value.
    fn input_tensor(&self, i: usize) -> &Tensor;

    /// The node's output tensor.
    fn output(&self) -> &Tensor;
}

/// The index into an input of shape `shape` that NumPy broadcasting reads for output
/// index `idx`: aligned at the right, a dimension of 1 read at 0.
pub fn broadcast_index(shape: &[usize], idx: &[Expr]) -> Vec<Expr> {
    let pad = idx.len() - shape.len();
    shape
        .iter()
        .enumerate()
        .map(|(d, &s)| {
            if s == 1 {
                Expr::int(0)
            } else {
                idx[pad + d].clone()
            }
        })
        .collect()
}

/// A condition as a value: 1 or 0 (bools are f32 numbers inside a kernel).
pub(crate) fn truth(c: Expr) -> Expr {
    te::if_then_else(c, Expr::f32(1.0), Expr::f32(0.0))
}

/// The integer value `v` (read from an index tensor) as an index into a dimension of
/// `n`: negative ones counted from the end, then clamped into `[0, n)`, so that a bad
/// index reads the nearest row (as the reference does) and the prover sees every gather
/// in bounds.
pub(crate) fn clamped_index(v: Expr, n: usize) -> Expr {
    let n = n as i64;
    let v = v.cast(DType::I32);
    let v = te::if_then_else(v.clone().lt(0), v.clone() + n, v);
    v.max(0).min(n - 1)
}
