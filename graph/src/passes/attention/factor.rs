//! A constant factor on an attention's queries or keys, taken into its scale.
//!
//! Exporters scale the scores in three places: after the product (`MatMul(q, kᵀ) · c`,
//! the TorchScript exporter's and Hugging Face's eager attention), on the queries alone
//! (`(q · c) kᵀ`: torchvision's Swin, Whisper's encoder, through the head reshape and
//! transpose) or on both operands by `√c` (PyTorch's decomposition of
//! `scaled_dot_product_attention`: torchvision's ViT). Since `(a·q)(b·k)ᵀ = a·b·(q kᵀ)`,
//! a factor on either operand is one more factor of the attention's scale: the node that
//! multiplied goes, and with it an elementwise chain in the operand's loads — which the
//! fusion rule would otherwise have to price, and could store as a kernel of its own.

use std::collections::HashMap;

use crate::graph::{Graph, Node, NodeId, TensorId};
use crate::op::{Binary, Op};

/// A constant factor found on one operand of the scores' product.
pub(super) struct Factor {
    /// The `Mul` or `Div` node that applies it; it goes with the rewrite.
    pub node: NodeId,
    /// What it multiplies (the tensor that takes the node's output's place).
    pub input: TensorId,
    /// The factor (`1 / c` for a `Div` by `c`).
    pub factor: f64,
    /// The layout change reading the node's output, which reads `input` instead after
    /// the rewrite; `None` where the product reads the node's output itself.
    pub reader: Option<NodeId>,
}

/// Walks back from `operand` (an input of the scores' product) through layout changes
/// that only this chain reads to a `Mul` by, or a `Div` over, a scalar constant whose
/// output only the chain reads. `internal(t)` says whether `t` has exactly one reader and
/// is no graph output; `producers` maps a tensor to its node.
pub(super) fn find(
    g: &Graph,
    operand: TensorId,
    producers: &HashMap<TensorId, NodeId>,
    internal: impl Fn(TensorId) -> bool,
) -> Option<Factor> {
    let mut t = operand;
    let mut reader = None;
    loop {
        if !internal(t) {
            return None;
        }
        let id = *producers.get(&t)?;
        let n = &g.nodes[id.0];
        if is_view(&n.op) {
            reader = Some(id);
            t = *n.inputs.first()?;
            continue;
        }
        let (x, c) = constant(g, n)?;
        // The scalar must not widen what it multiplies (a rank-0 factor on a rank-0
        // operand would), nor change its type, and must be finite and non-zero: a factor
        // of 0 or inf would turn the scores' NaN behaviour into the scale's.
        let (xt, out) = (g.tensor(x), g.tensor(t));
        if xt.shape != out.shape || xt.dtype != out.dtype || !c.is_finite() || c == 0.0 {
            return None;
        }
        return Some(Factor {
            node: id,
            input: x,
            factor: c,
            reader,
        });
    }
}

/// What `n` multiplies and by what, where it is a `Mul` by a scalar constant (on either
/// side) or a `Div` over one (the factor `1 / c`): the scores' own scale and the
/// operands' factors alike.
pub(super) fn constant(g: &Graph, n: &Node) -> Option<(TensorId, f64)> {
    let scalar = |t: TensorId| super::super::scalar(g, t);
    if n.op == Op::Binary(Binary::Mul) {
        match (scalar(n.inputs[1]), scalar(n.inputs[0])) {
            (Some(c), _) => Some((n.inputs[0], c)),
            (None, Some(c)) => Some((n.inputs[1], c)),
            (None, None) => None,
        }
    } else if n.op == Op::Binary(Binary::Div) {
        Some((n.inputs[0], 1.0 / scalar(n.inputs[1])?))
    } else {
        None
    }
}

/// Layout changes that commute with a product by a scalar (every element is one of the
/// input's, moved or repeated).
fn is_view(op: &Op) -> bool {
    matches!(
        op,
        Op::Reshape(_) | Op::Transpose(_) | Op::Flatten(_) | Op::Identity | Op::Expand(_)
    )
}
