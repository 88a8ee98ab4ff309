//! ONNX's index range. An op that reads an input as indices (a gather's, a scatter's:
//! [`IndexUse::Rows`] and [`IndexUse::Tuples`]) takes values in `[-n, n)` for the `n`
//! rows they index; any other value is an error in ONNX, never clamped. Where the
//! indices are known — a constant at import, a graph input before a run, any value in
//! the float64 reference — they are checked here; where they are computed on the
//! device, the model compiler adds a guard the run reads back (`weft_model::guard`).

use crate::error::GraphError;
pub use crate::op::first_outside;
use crate::op::{IndexUse, Op};
use crate::tensor::Tensor;

/// The input an op reads as indices and the rows they may reach: one bound for every
/// element, or one per position of the input's last axis (index tuples).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexBounds {
    /// Which input of the node holds the indices.
    pub input: usize,
    /// `[n]` for every element, or `[n₀, n₁, …]` along the last axis.
    pub rows: Vec<usize>,
}

/// Where `op` reads one of `inputs` as indices, that input and its bounds.
pub fn bounds(op: &Op, inputs: &[&Tensor]) -> Option<IndexBounds> {
    (0..inputs.len()).find_map(|i| match op.def().index_use(i, inputs) {
        IndexUse::Rows(n) => Some(IndexBounds {
            input: i,
            rows: vec![n],
        }),
        IndexUse::Tuples { .. } => {
            let q = inputs[i].shape.last().copied().unwrap_or(0);
            Some(IndexBounds {
                input: i,
                rows: inputs[0].shape[..q.min(inputs[0].shape.len())].to_vec(),
            })
        }
        IndexUse::Data | IndexUse::Through => None,
    })
}

/// The error for node `node` (its name) running `op`, whose indices `indices` hold
/// `value` at `element`, past `rows`.
pub fn out_of_range(
    (node, op): (&str, &Op),
    indices: &Tensor,
    (element, value, rows): (usize, f64, usize),
) -> GraphError {
    GraphError::IndexOutOfRange {
        node: node.to_string(),
        op: op.name(),
        indices: indices.name.clone(),
        element,
        value,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_per_element_or_per_position_of_the_last_axis() {
        assert_eq!(first_outside([-3.0, 2.0, 0.0], &[3]), None);
        assert_eq!(first_outside([0.0, 3.0], &[3]), Some((1, 3.0, 3)));
        assert_eq!(first_outside([-4.0], &[3]), Some((0, -4.0, 3)));
        assert!(matches!(first_outside([f64::NAN], &[3]), Some((0, v, 3)) if v.is_nan()));
        // Tuples into a [2, 5] data: position 0 reaches 2 rows, position 1 five.
        assert_eq!(first_outside([1.0, 4.0, -2.0, -5.0], &[2, 5]), None);
        assert_eq!(
            first_outside([1.0, 4.0, 2.0, 0.0], &[2, 5]),
            Some((2, 2.0, 2))
        );
    }
}
