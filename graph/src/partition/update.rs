//! Which cache updates run in place: the one question the memory plan and the lowering
//! both ask of a [`crate::op::TensorScatter`] node, answered once here.

use crate::graph::{Graph, NodeId};
use crate::op::Op;

/// True where node `n` (a [`crate::op::TensorScatter`]) of `g` updates its cache in place: the
/// cache is a graph input that no other node reads and is stored as the output is. Its
/// output then lives in the input's buffer, which a run leaves updated (the memory plan
/// and the lowering both ask this).
pub fn in_place(g: &Graph, n: NodeId) -> bool {
    let node = &g.nodes[n.0];
    if !matches!(node.op, Op::TensorScatter(_)) {
        return false;
    }
    let past = node.inputs[0];
    let (a, b) = (g.tensor(past), g.tensor(node.output));
    let readers = g.nodes.iter().filter(|m| m.inputs.contains(&past)).count();
    g.inputs.contains(&past)
        && readers == 1
        && node.inputs[1..].iter().all(|&t| t != past)
        && (a.dtype, a.layout) == (b.dtype, b.layout)
}
