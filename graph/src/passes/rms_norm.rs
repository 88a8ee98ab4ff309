//! RMS norm recognized: the chain PyTorch's exporters write for Hugging Face's
//! `LlamaRMSNorm` (Llama, Qwen, Mistral) and `T5LayerNorm`,
//!
//! ```text
//! s = Sqrt(Add(ReduceMean(Pow(x, 2) or x·x, trailing axes), epsilon))
//! y = Mul(x, Reciprocal(s)) or Mul(x, Div(1, s)) or Div(x, s)     [· gamma]
//! ```
//!
//! (the casts to f32 and back around it are identities in an f32 model, removed before;
//! in an f16 one they stay outside the norm), becomes one RMS `LayerNormalization(x,
//! gamma)` node, which the compiler schedules as one row reduction instead of a
//! reduction and the injective ops around it (a prologue of every reader otherwise).
//! Only a chain whose intermediate tensors nothing else reads (and no graph output
//! names) is rewritten; `gamma` must be a constant broadcasting to the normalized
//! dimensions (a missing gamma is ones).

use std::sync::Arc;

use ndarray::{ArrayD, IxDyn};

use super::PassContext;
use crate::graph::{Graph, Node, NodeId, Tensor, TensorId};
use crate::op::shapes::broadcast;
use crate::op::{Binary, LayerNorm, Op, Reduce, ReduceKind, Unary};
use crate::tensor::Layout;

/// Rewrites each decomposed RMS norm into one node; returns how many nodes went.
pub fn recognize_rms_norms(g: &mut Graph, _: &PassContext) -> usize {
    let mut removed = 0;
    while let Some(m) = find(g) {
        removed += rewrite(g, m);
    }
    removed
}

/// One match: the nodes of the chain (the last one's output kept as the norm's).
struct Match {
    nodes: Vec<NodeId>,
    x: TensorId,
    axis: usize,
    epsilon: f64,
    gamma: Option<TensorId>,
    output: TensorId,
}

fn find(g: &Graph) -> Option<Match> {
    let producers = g.producers();
    let consumers = g.consumers();
    let readers = |t: TensorId| consumers.get(&t).map_or(0, Vec::len);
    // Read by one node only and no graph output: the chain may swallow it.
    let inner = |t: TensorId| -> Option<(NodeId, &Node)> {
        if readers(t) != 1 || g.outputs.contains(&t) {
            return None;
        }
        producers.get(&t).map(|&n| (n, &g.nodes[n.0]))
    };
    let constant = |t: TensorId| super::scalar(g, t);
    for (i, root) in g.nodes.iter().enumerate() {
        let found = if root.op == Op::Binary(Binary::Div) {
            Some((root.inputs[0], root.inputs[1], vec![]))
        } else if root.op == Op::Binary(Binary::Mul) {
            [(0, 1), (1, 0)].into_iter().find_map(|(a, b)| {
                // x · Reciprocal(s), or x · Div(1, s).
                let (r, n) = inner(root.inputs[b])?;
                let s = if n.op == Op::Unary(Unary::Reciprocal) {
                    n.inputs[0]
                } else if n.op == Op::Binary(Binary::Div) && constant(n.inputs[0]) == Some(1.0) {
                    n.inputs[1]
                } else {
                    return None;
                };
                Some((root.inputs[a], s, vec![r]))
            })
        } else {
            None
        };
        let Some(found) = found else {
            continue;
        };
        let (x, s, mut nodes) = found;
        let Some(chain) = sqrt_mean_square(&inner, &constant, g, x, s) else {
            continue;
        };
        let (axis, epsilon, more) = chain;
        nodes.extend(more);
        nodes.push(NodeId(i));
        let (xt, yt) = (g.tensor(x), g.tensor(root.output));
        if xt.shape != yt.shape || xt.dtype != yt.dtype {
            continue;
        }
        // Then an optional · gamma, a constant over the normalized dimensions.
        let mut output = root.output;
        let normalized = &xt.shape[axis..];
        let fits = |t: TensorId| {
            let c = g.tensor(t);
            c.is_constant()
                && c.shape.len() <= normalized.len()
                && broadcast(&c.shape, normalized).as_deref() == Some(normalized)
        };
        let mut gamma = None;
        if readers(output) == 1 && !g.outputs.contains(&output) {
            let r = consumers[&output][0];
            let n = &g.nodes[r.0];
            if n.op == Op::Binary(Binary::Mul) {
                let w = if n.inputs[0] == output {
                    n.inputs[1]
                } else {
                    n.inputs[0]
                };
                if fits(w) && w != output {
                    nodes.push(r);
                    gamma = Some(w);
                    output = n.output;
                }
            }
        }
        return Some(Match {
            nodes,
            x,
            axis,
            epsilon,
            gamma,
            output,
        });
    }
    None
}

/// Where `s` is `Sqrt(ReduceMean(x², trailing axes) + epsilon)`, each tensor between
/// read once: the first reduced axis, epsilon, and the chain's nodes.
fn sqrt_mean_square<'g>(
    inner: &dyn Fn(TensorId) -> Option<(NodeId, &'g Node)>,
    constant: &dyn Fn(TensorId) -> Option<f64>,
    g: &Graph,
    x: TensorId,
    s: TensorId,
) -> Option<(usize, f64, Vec<NodeId>)> {
    let (sqrt_id, sqrt) = inner(s)?;
    if sqrt.op != Op::Unary(Unary::Sqrt) {
        return None;
    }
    let (add_id, add) = inner(sqrt.inputs[0])?;
    if add.op != Op::Binary(Binary::Add) {
        return None;
    }
    let (m, epsilon) = match (constant(add.inputs[0]), constant(add.inputs[1])) {
        (None, Some(e)) => (add.inputs[0], e),
        (Some(e), None) => (add.inputs[1], e),
        (Some(_), Some(_)) | (None, None) => return None,
    };
    let (mean_id, mean) = inner(m)?;
    let Op::Reduce(Reduce {
        kind: ReduceKind::Mean,
        axes,
        keep_dims: true,
    }) = &mean.op
    else {
        return None;
    };
    let rank = g.tensor(x).shape.len();
    let axis = rank.checked_sub(axes.len())?;
    if *axes != (axis..rank).collect::<Vec<_>>() || axes.is_empty() || epsilon < 0.0 {
        return None;
    }
    let (sq_id, sq) = inner(mean.inputs[0])?;
    let squares = sq.inputs[0] == x
        && ((sq.op == Op::Binary(Binary::Pow) && constant(sq.inputs[1]) == Some(2.0))
            || (sq.op == Op::Binary(Binary::Mul) && sq.inputs[1] == x));
    squares.then(|| (axis, epsilon, vec![sq_id, mean_id, add_id, sqrt_id]))
}

/// Replaces the matched chain by one node writing the chain's output.
fn rewrite(g: &mut Graph, m: Match) -> usize {
    let normalized: Vec<usize> = g.tensor(m.x).shape[m.axis..].to_vec();
    let gamma = m.gamma.unwrap_or_else(|| {
        let name = format!("{}.ones", g.tensor(m.output).name);
        g.add_tensor(Tensor {
            name,
            shape: normalized.clone(),
            dtype: g.tensor(m.x).dtype,
            layout: Layout::RowMajor,
            data: Some(Arc::new(ArrayD::from_elem(IxDyn(&normalized), 1.0))),
        })
    });
    // Named after the chain's first node (the squares), as the layer norm pass names it.
    let first = *m.nodes.iter().min().expect("a chain has nodes");
    let name = g.nodes[first.0].name.clone();
    let last = *m.nodes.iter().max().expect("a chain has nodes");
    // The norm takes the last node's place (its readers come after it).
    g.nodes[last.0] = Node {
        name: format!("{name}::rms_norm"),
        op: Op::LayerNorm(LayerNorm {
            axis: m.axis,
            epsilon: m.epsilon,
            rms: true,
        }),
        inputs: vec![m.x, gamma],
        output: m.output,
    };
    let drop: Vec<NodeId> = m.nodes.iter().copied().filter(|&n| n != last).collect();
    super::remove_nodes(g, drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::passes::testing::rewrite;
    use weft_ir::dtype::DType;

    fn scalar(b: &mut GraphBuilder, name: &str, v: f32) -> TensorId {
        b.weight(name, ArrayD::from_elem(IxDyn(&[]), v))
    }

    /// `x: f32[2,3,5]` through the RMS chain (`how`: 0 Reciprocal, 1 Div(1, ·), 2
    /// Div(x, ·)), times gamma, then a ReLU.
    fn chain(how: usize, pow: bool) -> crate::graph::Graph {
        let mut b = GraphBuilder::new("rms");
        let x = b.input("x", &[2, 3, 5], DType::F32);
        let p = if pow {
            let two = scalar(&mut b, "two", 2.0);
            b.binary("pow", Binary::Pow, x, two).unwrap()
        } else {
            b.binary("pow", Binary::Mul, x, x).unwrap()
        };
        let reduce = Op::Reduce(Reduce {
            kind: ReduceKind::Mean,
            axes: vec![2],
            keep_dims: true,
        });
        let m = b.node("mean", reduce, &[p]).unwrap();
        let eps = scalar(&mut b, "eps", 1e-6);
        let a = b.add("add", m, eps).unwrap();
        let s = b.unary("sqrt", Unary::Sqrt, a).unwrap();
        let n = if how == 0 {
            let r = b.unary("rsqrt", Unary::Reciprocal, s).unwrap();
            b.binary("mul", Binary::Mul, x, r).unwrap()
        } else if how == 1 {
            let one = scalar(&mut b, "one", 1.0);
            let r = b.binary("rsqrt", Binary::Div, one, s).unwrap();
            b.binary("mul", Binary::Mul, r, x).unwrap()
        } else {
            b.binary("mul", Binary::Div, x, s).unwrap()
        };
        let gamma = b.weight(
            "gamma",
            ArrayD::from_shape_vec(IxDyn(&[5]), vec![1.0, 2.0, 0.5, -1.0, 3.0]).unwrap(),
        );
        let y = b.binary("scale", Binary::Mul, gamma, n).unwrap();
        let out = b.relu("after", y).unwrap();
        b.output(out);
        b.finish().unwrap()
    }

    #[test]
    fn the_chains_of_both_exporters_become_one_node() {
        for (how, pow, changed) in [(0, true, 6), (1, true, 6), (2, false, 5)] {
            rewrite(&chain(how, pow), recognize_rms_norms).check(
                changed,
                "
                graph rms (2 nodes, 5 parameters)
                  input  %x: f32[2,3,5]
                  %scale = RMSNormalization(axis=2, epsilon=9.999999974752427e-7)(%x, %gamma): f32[2,3,5]    # pow::rms_norm
                  %after = Relu(%scale): f32[2,3,5]    # after
                  output %after
                ",
                1e-12,
            );
        }
    }

    #[test]
    fn a_chain_read_elsewhere_or_over_leading_axes_stays() {
        // The mean square read twice.
        let mut b = GraphBuilder::new("rms");
        let x = b.input("x", &[4, 6], DType::F32);
        let p = b.binary("sq", Binary::Mul, x, x).unwrap();
        let reduce = |axes: Vec<usize>| {
            Op::Reduce(Reduce {
                kind: ReduceKind::Mean,
                axes,
                keep_dims: true,
            })
        };
        let m = b.node("mean", reduce(vec![1]), &[p]).unwrap();
        let eps = scalar(&mut b, "eps", 1e-6);
        let a = b.add("add", m, eps).unwrap();
        let s = b.unary("sqrt", Unary::Sqrt, a).unwrap();
        let n = b.binary("div", Binary::Div, x, s).unwrap();
        let y = b.add("y", n, m).unwrap();
        b.output(y);
        assert_eq!(
            rewrite(&b.finish().unwrap(), recognize_rms_norms).changed,
            0
        );
        // Over the leading axis, not the trailing ones.
        let mut b = GraphBuilder::new("rms");
        let x = b.input("x", &[4, 6], DType::F32);
        let p = b.binary("sq", Binary::Mul, x, x).unwrap();
        let m = b.node("mean", reduce(vec![0]), &[p]).unwrap();
        let eps = scalar(&mut b, "eps", 1e-6);
        let a = b.add("add", m, eps).unwrap();
        let s = b.unary("sqrt", Unary::Sqrt, a).unwrap();
        let y = b.binary("div", Binary::Div, x, s).unwrap();
        b.output(y);
        assert_eq!(
            rewrite(&b.finish().unwrap(), recognize_rms_norms).changed,
            0
        );
    }
}
