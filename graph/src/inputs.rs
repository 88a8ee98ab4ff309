//! Random inputs for a graph, seeded: what `weft model run` feeds and what the tests
//! compare on. Floats are uniform in [-1, 1); an integer input read as indices (by a
//! Gather, directly or through reshapes and casts) is uniform over the rows it indexes;
//! any other integer or bool input (an attention mask) is 0 or 1.

use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::graph::{Graph, TensorId};
use crate::op::{Gather, GatherElements, Op};

/// One random input per graph input, from `seed`.
pub fn random_inputs(g: &Graph, seed: u64) -> Vec<ArrayD<f32>> {
    let mut rng = StdRng::seed_from_u64(seed);
    g.inputs
        .iter()
        .map(|&t| {
            let tensor = g.tensor(t);
            let shape = IxDyn(&tensor.shape);
            if tensor.dtype.is_float() {
                ArrayD::from_shape_fn(shape, |_| rng.random_range(-1.0f32..1.0))
            } else {
                let n = index_range(g, t).unwrap_or(2).max(1);
                ArrayD::from_shape_fn(shape, |_| rng.random_range(0..n) as f32)
            }
        })
        .collect()
}

/// How many rows tensor `t` indexes where a gather reads it as indices (through
/// reshapes, identities and casts): the smallest such count, `None` if none does.
pub fn index_range(g: &Graph, t: TensorId) -> Option<usize> {
    let consumers = g.consumers();
    let mut best: Option<usize> = None;
    let mut todo = vec![t];
    let mut seen = std::collections::HashSet::new();
    while let Some(t) = todo.pop() {
        if !seen.insert(t) {
            continue;
        }
        for n in consumers.get(&t).into_iter().flatten() {
            let node = &g.nodes[n.0];
            let rows = match &node.op {
                Op::Gather(Gather { axis }) | Op::GatherElements(GatherElements { axis })
                    if node.inputs[1] == t =>
                {
                    Some(g.tensor(node.inputs[0]).shape[*axis])
                }
                Op::GatherNd if node.inputs[1] == t => {
                    g.tensor(node.inputs[0]).shape.iter().copied().min()
                }
                // Ops that pass integers through unchanged: their readers may index.
                Op::Reshape(_) | Op::Flatten(_) | Op::Identity | Op::Cast(_) => {
                    todo.push(node.output);
                    None
                }
                Op::Gather(_)
                | Op::GatherElements(_)
                | Op::GatherNd
                | Op::Conv(_)
                | Op::BatchNorm(_)
                | Op::Unary(_)
                | Op::Binary(_)
                | Op::Clip(_)
                | Op::Pool(_)
                | Op::GlobalPool(_)
                | Op::Concat(_)
                | Op::Gemm(_)
                | Op::MatMul
                | Op::Transpose(_)
                | Op::Slice(_)
                | Op::Expand(_)
                | Op::Where
                | Op::IsNaN
                | Op::Softmax(_)
                | Op::LayerNorm(_)
                | Op::Reduce(_)
                | Op::Attention(_) => None,
            };
            if let Some(r) = rows {
                best = Some(best.map_or(r, |b| b.min(r)));
            }
        }
    }
    best
}
