//! Random inputs for a graph, seeded: what `weft model run` feeds and what the tests
//! compare on. Floats are uniform in [-1, 1); an integer input read as indices (by a
//! Gather, directly or through reshapes and casts) is uniform over the rows it indexes;
//! any other integer or bool input (an attention mask) is 0 or 1.

use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::graph::Tensor;
use crate::graph::{Graph, TensorId};
use crate::op::IndexUse;

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
            let inputs: Vec<&Tensor> = node.inputs.iter().map(|&i| g.tensor(i)).collect();
            // Every position the node reads `t` at (a node may read it twice).
            let mut rows = None;
            for (i, _) in node.inputs.iter().enumerate().filter(|&(_, &x)| x == t) {
                match node.op.def().index_use(i, &inputs) {
                    IndexUse::Rows(r) => rows = Some(rows.map_or(r, |b: usize| b.min(r))),
                    IndexUse::Through => todo.push(node.output),
                    IndexUse::Data => {}
                }
            }
            if let Some(r) = rows {
                best = Some(best.map_or(r, |b| b.min(r)));
            }
        }
    }
    best
}
