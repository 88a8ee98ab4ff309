//! Layer norm recognized: the chain older exporters (PyTorch's TorchScript exporter
//! before opset 17) write for `LayerNorm`,
//!
//! ```text
//! m = ReduceMean(x, trailing axes)    d = Sub(x, m)
//! v = ReduceMean(Pow(d, 2), the same axes)
//! y = Div(d, Sqrt(Add(v, epsilon)))   [· gamma]   [+ beta]
//! ```
//!
//! becomes one `LayerNormalization(x, gamma, beta)` node, which the compiler schedules as
//! one row reduction instead of two reductions and the injective ops between them. Only
//! a chain whose intermediate tensors nothing else reads (and no graph output names) is
//! rewritten; `gamma` and `beta` must be constants broadcasting to the normalized
//! dimensions (a missing gamma is ones).

use std::sync::Arc;

use ndarray::{ArrayD, IxDyn};

use super::PassContext;
use crate::graph::{Graph, NodeId, Tensor, TensorId};
use crate::op::shapes::broadcast;
use crate::op::{Binary, LayerNorm, Op, Reduce, ReduceKind, Unary};
use crate::tensor::Layout;

/// Rewrites each decomposed layer norm into one node; returns how many nodes went.
pub fn recognize_layer_norms(g: &mut Graph, _: &PassContext) -> usize {
    let mut removed = 0;
    while let Some(m) = find(g) {
        removed += rewrite(g, m);
    }
    removed
}

/// One match: the nodes to drop and what replaces them.
struct Match {
    /// Every node of the chain, the last one's output kept as the layer norm's.
    nodes: Vec<NodeId>,
    x: TensorId,
    axis: usize,
    epsilon: f64,
    gamma: Option<TensorId>,
    beta: Option<TensorId>,
    output: TensorId,
}

fn find(g: &Graph) -> Option<Match> {
    let producers = g.producers();
    let consumers = g.consumers();
    let readers = |t: TensorId| consumers.get(&t).map_or(0, Vec::len);
    let internal = |t: TensorId, n: usize| readers(t) == n && !g.outputs.contains(&t);
    let made_by = |t: TensorId| producers.get(&t).map(|&n| (n, &g.nodes[n.0]));
    let constant = |t: TensorId| super::scalar(g, t);
    for (i, div) in g.nodes.iter().enumerate() {
        if div.op != Op::Binary(Binary::Div) {
            continue;
        }
        let (d, s) = (div.inputs[0], div.inputs[1]);
        // d = Sub(x, ReduceMean(x)), read by the Pow and the Div.
        let Some((sub_id, sub)) = made_by(d) else {
            continue;
        };
        if sub.op != Op::Binary(Binary::Sub) || !internal(d, 2) {
            continue;
        }
        let (x, m) = (sub.inputs[0], sub.inputs[1]);
        let Some((mean_id, mean)) = made_by(m) else {
            continue;
        };
        let Op::Reduce(Reduce {
            kind: ReduceKind::Mean,
            axes,
            keep_dims: true,
        }) = &mean.op
        else {
            continue;
        };
        let rank = g.tensor(x).shape.len();
        // The reduced axes must be the trailing ones.
        let axis = rank - axes.len();
        if mean.inputs[0] != x || !internal(m, 1) || *axes != (axis..rank).collect::<Vec<_>>() {
            continue;
        }
        // s = Sqrt(Add(ReduceMean(Pow(d, 2)), epsilon)).
        let Some((sqrt_id, sqrt)) = made_by(s) else {
            continue;
        };
        if sqrt.op != Op::Unary(Unary::Sqrt) || !internal(s, 1) {
            continue;
        }
        let Some((add_id, add)) = made_by(sqrt.inputs[0]) else {
            continue;
        };
        if add.op != Op::Binary(Binary::Add) || !internal(sqrt.inputs[0], 1) {
            continue;
        }
        let Some(epsilon) = constant(add.inputs[1]) else {
            continue;
        };
        let Some((var_id, var)) = made_by(add.inputs[0]) else {
            continue;
        };
        if var.op != mean.op || !internal(add.inputs[0], 1) {
            continue;
        }
        let Some((pow_id, pow)) = made_by(var.inputs[0]) else {
            continue;
        };
        let squares = pow.op == Op::Binary(Binary::Pow)
            && pow.inputs[0] == d
            && constant(pow.inputs[1]) == Some(2.0);
        if !squares || !internal(var.inputs[0], 1) {
            continue;
        }
        let mut nodes = vec![mean_id, sub_id, pow_id, var_id, add_id, sqrt_id, NodeId(i)];
        let mut output = div.output;
        // Then an optional · gamma and + beta, constants over the normalized dimensions.
        let normalized = &g.tensor(x).shape[axis..];
        let fits = |t: TensorId| {
            let c = g.tensor(t);
            c.is_constant()
                && c.shape.len() <= normalized.len()
                && broadcast(&c.shape, normalized).as_deref() == Some(normalized)
        };
        let next = |t: TensorId, op: Binary| -> Option<(NodeId, TensorId)> {
            if !internal(t, 1) {
                return None;
            }
            let r = consumers.get(&t)?[0];
            let n = &g.nodes[r.0];
            (n.op == Op::Binary(op) && n.inputs[0] == t && fits(n.inputs[1]))
                .then_some((r, n.inputs[1]))
        };
        let mut gamma = None;
        if let Some((n, w)) = next(output, Binary::Mul) {
            nodes.push(n);
            gamma = Some(w);
            output = g.nodes[n.0].output;
        }
        let mut beta = None;
        if let Some((n, b)) = next(output, Binary::Add) {
            nodes.push(n);
            beta = Some(b);
            output = g.nodes[n.0].output;
        }
        return Some(Match {
            nodes,
            x,
            axis,
            epsilon,
            gamma,
            beta,
            output,
        });
    }
    None
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
    let mut inputs = vec![m.x, gamma];
    inputs.extend(m.beta);
    let name = g.nodes[m.nodes[0].0].name.clone();
    let last = *m.nodes.iter().max().expect("a chain has nodes");
    // The layer norm takes the last node's place (its readers come after it).
    g.nodes[last.0] = crate::graph::Node {
        name: format!("{name}::layer_norm"),
        op: Op::LayerNorm(LayerNorm {
            axis: m.axis,
            epsilon: m.epsilon,
            rms: false,
        }),
        inputs,
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

    #[test]
    fn the_decomposed_chain_becomes_one_node() {
        let mut b = GraphBuilder::new("ln");
        let x = b.input("x", &[2, 3, 5], DType::F32);
        let reduce = Op::Reduce(Reduce {
            kind: ReduceKind::Mean,
            axes: vec![2],
            keep_dims: true,
        });
        let m = b.node("mean", reduce.clone(), &[x]).unwrap();
        let d = b.binary("sub", Binary::Sub, x, m).unwrap();
        let two = scalar(&mut b, "two", 2.0);
        let p = b.binary("pow", Binary::Pow, d, two).unwrap();
        let v = b.node("var", reduce, &[p]).unwrap();
        let eps = scalar(&mut b, "eps", 1e-5);
        let ve = b.add("add_eps", v, eps).unwrap();
        let s = b.unary("sqrt", Unary::Sqrt, ve).unwrap();
        let n = b.binary("div", Binary::Div, d, s).unwrap();
        let gamma = b.weight(
            "gamma",
            ArrayD::from_shape_vec(IxDyn(&[5]), vec![1.0, 2.0, 0.5, -1.0, 3.0]).unwrap(),
        );
        let y = b.binary("mul", Binary::Mul, n, gamma).unwrap();
        let beta = b.weight("beta", ArrayD::from_elem(IxDyn(&[5]), 0.25));
        let z = b.add("add_beta", y, beta).unwrap();
        let out = b.relu("after", z).unwrap();
        b.output(out);
        let g = b.finish().unwrap();
        rewrite(&g, recognize_layer_norms).check(8, "
            graph ln (2 nodes, 10 parameters)
              input  %x: f32[2,3,5]
              %add_beta = LayerNormalization(axis=2, epsilon=9.999999747378752e-6)(%x, %gamma, %beta): f32[2,3,5]    # mean::layer_norm
              %after = Relu(%add_beta): f32[2,3,5]    # after
              output %after
            ", 1e-12);
        // Read twice, `d` must stay: the same chain with another reader is left alone.
        let mut b2 = GraphBuilder::new("ln2");
        let x = b2.input("x", &[4, 6], DType::F32);
        let reduce = Op::Reduce(Reduce {
            kind: ReduceKind::Mean,
            axes: vec![1],
            keep_dims: true,
        });
        let m = b2.node("mean", reduce.clone(), &[x]).unwrap();
        let d = b2.binary("sub", Binary::Sub, x, m).unwrap();
        let two = scalar(&mut b2, "two", 2.0);
        let p = b2.binary("pow", Binary::Pow, d, two).unwrap();
        let v = b2.node("var", reduce, &[p]).unwrap();
        let eps = scalar(&mut b2, "eps", 1e-5);
        let ve = b2.add("add_eps", v, eps).unwrap();
        let s = b2.unary("sqrt", Unary::Sqrt, ve).unwrap();
        let n = b2.binary("div", Binary::Div, d, s).unwrap();
        let extra = b2.relu("extra", d).unwrap();
        let y = b2.add("y", n, extra).unwrap();
        b2.output(y);
        let g2 = b2.finish().unwrap();
        assert_eq!(rewrite(&g2, recognize_layer_norms).changed, 0);
    }
}
