//! A product's group holding an RMS norm of its `a` (`Group::row_norm`, folded by
//! `weft_graph::partition::row_norm`): the operands the skinny-product template computes
//! the norm from — the norm's input `x` as the product's `[m, k]` rows, read in f32, and
//! its scale `γ` as a `[k]` vector — instead of the norm's stored output.
//!
//! The norm's output is never rounded to its storage type: the template reads `x · γ`
//! in f32 and scales each f32 sum by the row's factor, so in an f16 model the fold drops
//! one rounding (the norm's output to f16) and changes only the order of f32 operations
//! otherwise — at least as accurate as the norm's kernel and the product after it.

use weft_graph::Graph;
use weft_graph::op::{LayerNorm, Op};
use weft_graph::partition::Group;
use weft_ir::prelude::*;
use weft_kernels::gemv::RowNorm;

use super::values::{Values, broadcast_index, reindex};
use crate::error::LowerError;

/// The folded norm's operands: `x` as the product's `[m, k]` rows (f32) and the norm.
pub(super) struct Folded {
    pub(super) x: Buffer,
    pub(super) norm: RowNorm,
    /// For the schedule line: the norm's node and epsilon.
    pub(super) what: String,
}

/// The operands of `group`'s folded RMS norm for a product of `m × k` (`None` where the
/// group folds none); `x` is `stored_x` where given (the norm's input as the `[m, k]`
/// placeholder the K-major template reads), else a view of the input's rows.
pub(super) fn operands(
    g: &Graph,
    group: &Group,
    vals: &Values,
    m: i64,
    k: i64,
    stored_x: Option<&Buffer>,
) -> Result<Option<Folded>, LowerError> {
    let Some(n) = group.row_norm else {
        return Ok(None);
    };
    let node = &g.nodes[n.0];
    let epsilon = match &node.op {
        Op::LayerNorm(LayerNorm {
            epsilon, rms: true, ..
        }) => *epsilon,
        other => {
            return Err(LowerError::Refused(format!(
                "`{}` ({}) is folded into the product as an RMS norm, which it is not",
                node.name,
                other.name()
            )));
        }
    };
    let (x, gamma) = (node.inputs[0], node.inputs[1]);
    let xs = &g.tensor(x).shape;
    let rows: Vec<usize> = xs[..xs.len() - 1].to_vec();
    if rows.iter().product::<usize>() as i64 != m || xs[xs.len() - 1] as i64 != k {
        return Err(LowerError::Refused(format!(
            "the RMS norm `{}` over {xs:?} is not the product's {m} × {k} rows",
            node.name
        )));
    }
    let x_rows = match stored_x {
        Some(b) => b.clone(),
        None => te::compute("x_rows", &[("i", m), ("kk", k)], |ix| {
            let mut at = reindex(&[m as usize], &rows, &ix[..1]);
            at.push(ix[1].clone());
            vals.at(x, &at)
        }),
    };
    let gamma_shape = g.tensor(gamma).shape.clone();
    let gamma = te::compute("gamma", &[("kk", k)], |ix| {
        vals.at(gamma, &broadcast_index(&gamma_shape, ix))
    });
    Ok(Some(Folded {
        x: x_rows,
        norm: RowNorm {
            gamma,
            epsilon: epsilon as f32,
        },
        what: format!(
            "RMS norm {} folded in (ε = {:e}: its squares summed beside the products, its factor a row at the store)",
            node.name, epsilon as f32
        ),
    }))
}
