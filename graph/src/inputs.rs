//! Random inputs for a graph, seeded: what `weft model run` feeds and what the tests
//! compare on. Floats are uniform in [-1, 1); an integer input read as indices (by a
//! Gather, directly or through reshapes and casts) is uniform over the rows it indexes;
//! any other integer or bool input (an attention mask) is 0 or 1.

use ndarray::{ArrayD, IxDyn};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::GraphError;
use crate::graph::Tensor;
use crate::graph::{Graph, TensorId};
use crate::op::{IndexUse, Op};

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

/// Checks that every integer graph input a Gather or GatherElements reads as indices
/// (directly or through reshapes, identities and casts) holds only indices ONNX allows:
/// `[-n, n)` for the `n` rows of the axis it indexes. Out of range is an error in ONNX;
/// weft's kernels would clamp it and give an answer with no error, so the inputs are
/// checked on the host before any run, on every target. (A GatherND's bound differs per
/// position of its last axis: its inputs are left to the reference.)
pub fn check_indices<A: Copy + Into<f64>>(
    g: &Graph,
    inputs: &[ArrayD<A>],
) -> Result<(), GraphError> {
    for (&t, x) in g.inputs.iter().zip(inputs) {
        let tensor = g.tensor(t);
        if tensor.dtype.is_float() {
            continue;
        }
        let Some((n, node)) = gathered_by(g, t) else {
            continue;
        };
        let bound = n as f64;
        if let Some((i, v)) = x
            .iter()
            .map(|&v| v.into())
            .enumerate()
            .find(|&(_, v)| !(v >= -bound && v < bound))
        {
            let node = &g.nodes[node];
            return Err(GraphError::Input {
                name: tensor.name.clone(),
                what: format!(
                    "element {i} is {v}, out of range for node `{}` ({}), which indexes {n} rows: ONNX allows {} to {}",
                    node.name,
                    node.op.name(),
                    -bound,
                    bound - 1.0
                ),
            });
        }
    }
    Ok(())
}

/// The fewest rows a Gather or GatherElements indexes with tensor `t` (through reshapes,
/// identities and casts), and that node.
fn gathered_by(g: &Graph, t: TensorId) -> Option<(usize, usize)> {
    let consumers = g.consumers();
    let mut best: Option<(usize, usize)> = None;
    let mut todo = vec![t];
    let mut seen = std::collections::HashSet::new();
    while let Some(t) = todo.pop() {
        if !seen.insert(t) {
            continue;
        }
        for n in consumers.get(&t).into_iter().flatten() {
            let node = &g.nodes[n.0];
            let checked = matches!(node.op, Op::Gather(_) | Op::GatherElements(_));
            let inputs: Vec<&Tensor> = node.inputs.iter().map(|&i| g.tensor(i)).collect();
            for (i, _) in node.inputs.iter().enumerate().filter(|&(_, &x)| x == t) {
                match node.op.def().index_use(i, &inputs) {
                    IndexUse::Rows(r) if checked => {
                        if best.is_none_or(|(b, _)| r < b) {
                            best = Some((r, n.0));
                        }
                    }
                    IndexUse::Rows(_) | IndexUse::Data => {}
                    IndexUse::Through => todo.push(node.output),
                }
            }
        }
    }
    best
}
