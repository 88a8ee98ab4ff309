//! Rotary embeddings recognized: the chain PyTorch's exporters write for Hugging Face's
//! `apply_rotary_pos_emb` (Llama, Qwen2, Mistral: `q · cos + rotate_half(q) · sin`),
//!
//! ```text
//! x1 = Slice(x, last axis, [0, d/2))      x2 = Slice(x, last axis, [d/2, d))
//! r  = Concat(Neg(x2), x1, last axis)
//! y  = Add(Mul(x, cos), Mul(r, sin))      (either operand order in each)
//! ```
//!
//! becomes one [`Rotary`](crate::op::Rotary) node `Rotary(x, cos, sin)`, computed inline
//! where it is read. Left as the chain, the `Concat` is a join whose halves are kernels
//! of their own (four launches a layer for the query and key). Only a chain whose
//! intermediate tensors nothing else reads (and no graph output names) is rewritten, and
//! only where `cos` and `sin` broadcast to `x` and share its type.

use super::PassContext;
use crate::graph::{Graph, Node, NodeId, TensorId};
use crate::op::shapes::broadcast;
use crate::op::{Binary, Concat, Op, Slice, Unary};

/// Rewrites each rotate-half chain into one node; returns how many nodes went.
pub fn recognize_rotary(g: &mut Graph, _: &PassContext) -> usize {
    let mut removed = 0;
    while let Some(m) = find(g) {
        removed += rewrite(g, m);
    }
    removed
}

/// One match: the root (`Add`), the chain's other nodes, and the node's inputs.
struct Match {
    root: NodeId,
    nodes: Vec<NodeId>,
    x: TensorId,
    cos: TensorId,
    sin: TensorId,
}

fn find(g: &Graph) -> Option<Match> {
    let producers = g.producers();
    let consumers = g.consumers();
    // Read by one node only and no graph output: the chain may swallow it.
    let inner = |t: TensorId| -> Option<(NodeId, &Node)> {
        if consumers.get(&t).map_or(0, Vec::len) != 1 || g.outputs.contains(&t) {
            return None;
        }
        producers.get(&t).map(|&n| (n, &g.nodes[n.0]))
    };
    let mul = |t: TensorId| -> Option<(NodeId, [TensorId; 2])> {
        let (id, n) = inner(t)?;
        (n.op == Op::Binary(Binary::Mul)).then(|| (id, [n.inputs[0], n.inputs[1]]))
    };
    for (i, root) in g.nodes.iter().enumerate() {
        if root.op != Op::Binary(Binary::Add) {
            continue;
        }
        for (a, b) in [(0, 1), (1, 0)] {
            let (Some((ma, fa)), Some((mb, fb))) = (mul(root.inputs[a]), mul(root.inputs[b]))
            else {
                continue;
            };
            // `b` is rotate_half(x) · sin, in either order; `a` is x · cos.
            for (r, sin) in [(fb[0], fb[1]), (fb[1], fb[0])] {
                let Some((x, mut nodes)) = rotate_half(g, &inner, r) else {
                    continue;
                };
                let cos = if fa[0] == x {
                    fa[1]
                } else if fa[1] == x {
                    fa[0]
                } else {
                    continue;
                };
                let xt = g.tensor(x);
                let fits = |t: TensorId| {
                    let c = g.tensor(t);
                    t != x
                        && c.dtype == xt.dtype
                        && c.shape.len() <= xt.shape.len()
                        && broadcast(&c.shape, &xt.shape).as_deref() == Some(&xt.shape[..])
                };
                let out = g.tensor(root.output);
                if !fits(cos) || !fits(sin) || out.shape != xt.shape || out.dtype != xt.dtype {
                    continue;
                }
                nodes.extend([ma, mb]);
                return Some(Match {
                    root: NodeId(i),
                    nodes,
                    x,
                    cos,
                    sin,
                });
            }
        }
    }
    None
}

/// Where `r` is `Concat(Neg(Slice(x, second half)), Slice(x, first half))` over the
/// last axis, each tensor between read once: `x` and the chain's nodes.
fn rotate_half<'g>(
    g: &'g Graph,
    inner: &dyn Fn(TensorId) -> Option<(NodeId, &'g Node)>,
    r: TensorId,
) -> Option<(TensorId, Vec<NodeId>)> {
    let (cat_id, cat) = inner(r)?;
    let rank = g.tensor(r).shape.len();
    if cat.op
        != Op::Concat(Concat {
            axis: rank.checked_sub(1)?,
        })
        || cat.inputs.len() != 2
    {
        return None;
    }
    let (neg_id, neg) = inner(cat.inputs[0])?;
    if neg.op != Op::Unary(Unary::Neg) {
        return None;
    }
    let (x2_id, x2) = inner(neg.inputs[0])?;
    let (x1_id, x1) = inner(cat.inputs[1])?;
    let x = x2.inputs.first().copied()?;
    if x1.inputs.first() != Some(&x) {
        return None;
    }
    let shape = &g.tensor(x).shape;
    let d = *shape.last()?;
    if d % 2 != 0 || shape.len() != rank {
        return None;
    }
    // The half of `x` from `start` along the last axis, all of every other axis.
    let half = |n: &Node, start: usize| {
        let Op::Slice(Slice {
            starts,
            steps,
            sizes,
        }) = &n.op
        else {
            return false;
        };
        (0..rank).all(|k| {
            let (want_start, want_size) = if k + 1 == rank {
                (start, d / 2)
            } else {
                (0, shape[k])
            };
            starts[k] == want_start && steps[k] == 1 && sizes[k] == want_size
        })
    };
    (half(x1, 0) && half(x2, d / 2)).then(|| (x, vec![cat_id, neg_id, x2_id, x1_id]))
}

/// Replaces the matched chain by one node writing the root's output.
fn rewrite(g: &mut Graph, m: Match) -> usize {
    let root = &g.nodes[m.root.0];
    // The node takes the root's place: its readers come after it, its inputs before
    // the chain's first node.
    g.nodes[m.root.0] = Node {
        name: format!("{}::rotary", root.name),
        op: Op::Rotary,
        inputs: vec![m.x, m.cos, m.sin],
        output: root.output,
    };
    super::remove_nodes(g, m.nodes)
}

#[cfg(test)]
#[path = "rotary_tests.rs"]
mod tests;
