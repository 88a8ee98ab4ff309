//! Sibling products merged: MatMuls that read the same activation, each by a constant
//! weight `[K, Nᵢ]` (a transformer's query, key and value projections), become one
//! MatMul by the weights side by side (`[K, ΣNᵢ]`), with their bias Adds as one Add of
//! the biases side by side, and a Slice per sibling giving back its columns:
//!
//! ```text
//! q = x·Wq + bq   k = x·Wk + bk   v = x·Wv + bv
//!   →   qkv = x·[Wq Wk Wv] + [bq bk bv];  q, k, v = slices of qkv's last dimension
//! ```
//!
//! One product of `ΣNᵢ` columns fills the GPU better than three small ones (BERT-base's
//! projections at 128 tokens are `128 × 768 × 768` each), and reads `x` once. The slices
//! are index maps, which the compiler folds into whatever reads them, so they cost no
//! kernel. Siblings merge only where every one of them has a constant bias over its
//! columns, or none has.

use std::collections::HashMap;
use std::sync::Arc;

use ndarray::{ArrayD, Axis, concatenate};

use super::PassContext;
use crate::graph::{Graph, Node, NodeId, Tensor, TensorId};
use crate::op::{Binary, Op, Slice};
use crate::tensor::Layout;

/// Merges each set of sibling products; returns how many nodes it removed or rewrote.
pub fn merge_sibling_products(g: &mut Graph, _: &PassContext) -> usize {
    let mut changed = 0;
    while let Some(set) = find(g) {
        changed += rewrite(g, set);
    }
    changed
}

/// One sibling: its MatMul, weight, optional bias Add and the tensor it gives.
struct Sibling {
    matmul: NodeId,
    weight: TensorId,
    bias: Option<(NodeId, TensorId)>,
    output: TensorId,
}

fn find(g: &Graph) -> Option<(TensorId, Vec<Sibling>)> {
    let consumers = g.consumers();
    let only_reader = |t: TensorId| -> Option<NodeId> {
        match consumers.get(&t).map(Vec::as_slice) {
            Some([n]) if !g.outputs.contains(&t) => Some(*n),
            Some(_) | None => None,
        }
    };
    // Products by a constant matrix, grouped by their activation and K, in graph order.
    let mut by_input: Vec<(TensorId, Vec<Sibling>)> = Vec::new();
    let mut at: HashMap<TensorId, usize> = HashMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if n.op != Op::MatMul {
            continue;
        }
        let (x, w) = (n.inputs[0], n.inputs[1]);
        let (xs, ws) = (&g.tensor(x).shape, &g.tensor(w).shape);
        if !g.tensor(w).is_constant()
            || ws.len() != 2
            || xs.len() < 2
            || xs.last() != ws.first()
            || g.tensor(w).layout != Layout::RowMajor
        {
            continue;
        }
        let cols = ws[1];
        // A bias Add over the product's columns, its only reader, with the bias on
        // either side: PyTorch's TorchScript exporter writes `Add(bias, x·W)` for a
        // Linear over a sequence, the zoo and the dynamo exporter `Add(x·W, bias)`.
        let bias = only_reader(n.output).and_then(|a| {
            let add = &g.nodes[a.0];
            let [left, right] = add.inputs.as_slice() else {
                return None;
            };
            let c = if *left == n.output { *right } else { *left };
            if c == n.output || (*left != n.output && *right != n.output) {
                return None;
            }
            let fits = add.op == Op::Binary(Binary::Add)
                && g.tensor(c).is_constant()
                && g.tensor(c).shape == [cols];
            fits.then_some((a, c))
        });
        let output = bias.map_or(n.output, |(a, _)| g.nodes[a.0].output);
        let s = Sibling {
            matmul: NodeId(i),
            weight: w,
            bias,
            output,
        };
        match at.get(&x) {
            Some(&k) => by_input[k].1.push(s),
            None => {
                at.insert(x, by_input.len());
                by_input.push((x, vec![s]));
            }
        }
    }
    by_input.into_iter().find_map(|(x, siblings)| {
        // The largest set of one kind: all with a bias, or all without.
        let (with, without): (Vec<Sibling>, Vec<Sibling>) =
            siblings.into_iter().partition(|s| s.bias.is_some());
        let set = if with.len() >= without.len() {
            with
        } else {
            without
        };
        (set.len() >= 2).then_some((x, set))
    })
}

/// Replaces the siblings by one product (and one bias Add) and a Slice each.
fn rewrite(g: &mut Graph, (x, set): (TensorId, Vec<Sibling>)) -> usize {
    let rank = g.tensor(x).shape.len();
    let dtype = g.tensor(x).dtype;
    let first = g.nodes[set[0].matmul.0].name.clone();
    let data = |g: &Graph, t: TensorId| -> Arc<ArrayD<f32>> {
        // The sibling's constants: `find` took only tensors with data.
        g.tensor(t).data.clone().expect("a constant has data")
    };
    let cat = |parts: Vec<Arc<ArrayD<f32>>>, axis: usize| -> ArrayD<f32> {
        let views: Vec<_> = parts.iter().map(|a| a.view()).collect();
        // Same rank, equal sizes off `axis` (one K; biases are vectors): cannot fail.
        concatenate(Axis(axis), &views).expect("siblings' constants concatenate")
    };
    let weights = cat(set.iter().map(|s| data(g, s.weight)).collect(), 1);
    let cols: Vec<usize> = set.iter().map(|s| g.tensor(s.weight).shape[1]).collect();
    let total: usize = cols.iter().sum();
    let mut out_shape = g.tensor(x).shape.clone();
    out_shape[rank - 1] = total;
    let constant = |g: &mut Graph, name: String, a: ArrayD<f32>| {
        g.add_tensor(Tensor {
            name,
            shape: a.shape().to_vec(),
            dtype,
            layout: Layout::RowMajor,
            data: Some(Arc::new(a)),
        })
    };
    let activation = |g: &mut Graph, name: String| {
        g.add_tensor(Tensor {
            name,
            shape: out_shape.clone(),
            dtype,
            layout: Layout::RowMajor,
            data: None,
        })
    };
    let w = constant(g, format!("{first}.merged_weight"), weights);
    let product = activation(g, format!("{first}.merged"));
    let mut new_nodes = vec![Node {
        name: format!("{first}::merged"),
        op: Op::MatMul,
        inputs: vec![x, w],
        output: product,
    }];
    let mut sliced = product;
    if set[0].bias.is_some() {
        let biases = cat(
            set.iter()
                .filter_map(|s| s.bias.map(|(_, c)| data(g, c)))
                .collect(),
            0,
        );
        let b = constant(g, format!("{first}.merged_bias"), biases);
        sliced = activation(g, format!("{first}.merged_biased"));
        new_nodes.push(Node {
            name: format!("{first}::merged_bias"),
            op: Op::Binary(Binary::Add),
            inputs: vec![product, b],
            output: sliced,
        });
    }
    let mut offset = 0;
    for (s, &n) in set.iter().zip(&cols) {
        let mut starts = vec![0; rank];
        starts[rank - 1] = offset;
        let mut sizes = out_shape.clone();
        sizes[rank - 1] = n;
        new_nodes.push(Node {
            name: format!("{}::columns", g.nodes[s.matmul.0].name),
            op: Op::Slice(Slice {
                starts,
                steps: vec![1; rank],
                sizes,
            }),
            inputs: vec![sliced],
            output: s.output,
        });
        offset += n;
    }
    // The merged nodes go where the first sibling was: `x` is computed before it, and
    // every reader of a sibling's output comes after that sibling.
    let mut drop: Vec<NodeId> = set.iter().map(|s| s.matmul).collect();
    drop.extend(set.iter().filter_map(|s| s.bias.map(|(a, _)| a)));
    let place = set[0].matmul;
    let removed = drop.len();
    let old = std::mem::take(&mut g.nodes);
    for (i, n) in old.into_iter().enumerate() {
        if NodeId(i) == place {
            g.nodes.append(&mut new_nodes);
        }
        if !drop.contains(&NodeId(i)) {
            g.nodes.push(n);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::passes::testing::rewrite;
    use ndarray::IxDyn;
    use weft_ir::dtype::DType;

    fn matrix(rows: usize, cols: usize, seed: f32) -> ArrayD<f32> {
        ArrayD::from_shape_fn(IxDyn(&[rows, cols]), |ix| {
            ((ix[0] * 7 + ix[1] * 3) as f32 * 0.37 + seed).sin()
        })
    }

    #[test]
    fn query_key_value_become_one_product() {
        let mut b = GraphBuilder::new("qkv");
        let x = b.input("x", &[2, 5, 6], DType::F32);
        let mut outs = Vec::new();
        for (i, cols) in [4usize, 4, 3].into_iter().enumerate() {
            let w = b.weight(format!("w{i}"), matrix(6, cols, i as f32));
            let p = b.node(format!("mm{i}"), Op::MatMul, &[x, w]).unwrap();
            let bias = b.weight(
                format!("b{i}"),
                ArrayD::from_shape_fn(IxDyn(&[cols]), |ix| ix[0] as f32 - 1.5),
            );
            // The first sibling's bias on the left, as TorchScript's exports write it.
            let y = if i == 0 {
                b.add(format!("add{i}"), bias, p).unwrap()
            } else {
                b.add(format!("add{i}"), p, bias).unwrap()
            };
            outs.push(b.relu(format!("r{i}"), y).unwrap());
        }
        // A fourth product of the same x without a bias stays as it is.
        let w = b.weight("w3", matrix(6, 2, 9.0));
        let lone = b.node("mm3", Op::MatMul, &[x, w]).unwrap();
        outs.push(lone);
        for o in outs {
            b.output(o);
        }
        let g = b.finish().unwrap();
        rewrite(&g, merge_sibling_products).check(6, "
            graph qkv (9 nodes, 89 parameters)
              input  %x: f32[2,5,6]
              %mm0.merged = MatMul(%x, %mm0.merged_weight): f32[2,5,11]    # mm0::merged
              %mm0.merged_biased = Add(%mm0.merged, %mm0.merged_bias): f32[2,5,11]    # mm0::merged_bias
              %add0 = Slice(starts=[0, 0, 0], steps=[1, 1, 1], sizes=[2, 5, 4])(%mm0.merged_biased): f32[2,5,4]    # mm0::columns
              %add1 = Slice(starts=[0, 0, 4], steps=[1, 1, 1], sizes=[2, 5, 4])(%mm0.merged_biased): f32[2,5,4]    # mm1::columns
              %add2 = Slice(starts=[0, 0, 8], steps=[1, 1, 1], sizes=[2, 5, 3])(%mm0.merged_biased): f32[2,5,3]    # mm2::columns
              %r0 = Relu(%add0): f32[2,5,4]    # r0
              %r1 = Relu(%add1): f32[2,5,4]    # r1
              %r2 = Relu(%add2): f32[2,5,3]    # r2
              %mm3 = MatMul(%x, %w3): f32[2,5,2]    # mm3
              output %r0, %r1, %r2, %mm3
            ", 1e-12);
    }

    #[test]
    fn products_of_different_inputs_or_computed_weights_stay() {
        let mut b = GraphBuilder::new("apart");
        let x = b.input("x", &[3, 4], DType::F32);
        let y = b.input("y", &[3, 4], DType::F32);
        let v = b.input("v", &[4, 5], DType::F32);
        let w = b.weight("w", matrix(4, 4, 0.0));
        let p = b.node("p", Op::MatMul, &[x, w]).unwrap();
        let q = b.node("q", Op::MatMul, &[y, w]).unwrap();
        let r = b.node("r", Op::MatMul, &[x, v]).unwrap();
        for o in [p, q, r] {
            b.output(o);
        }
        let g = b.finish().unwrap();
        assert_eq!(rewrite(&g, merge_sibling_products).changed, 0);
    }
}
