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
                    IndexUse::Rows(r) | IndexUse::Tuples { fewest: r } => {
                        rows = Some(rows.map_or(r, |b: usize| b.min(r)))
                    }
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
                    IndexUse::Rows(_) | IndexUse::Tuples { .. } | IndexUse::Data => {}
                    IndexUse::Through => todo.push(node.output),
                }
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::op::{Cast, Gather};
    use weft_ir::dtype::DType;

    /// `ids` (int) cast and gathered from a `[3, 4]` table; the table's rows bound the ids.
    fn lookup() -> Graph {
        let mut b = GraphBuilder::new("lookup");
        let ids = b.input("ids", &[2], DType::I32);
        let table = b.weight("table", ArrayD::from_elem(IxDyn(&[3, 4]), 1.0));
        let ids = b
            .node("cast", Op::Cast(Cast { to: DType::I32 }), &[ids])
            .unwrap();
        let y = b
            .node("g", Op::Gather(Gather { axis: 0 }), &[table, ids])
            .unwrap();
        b.output(y);
        b.finish().unwrap()
    }

    #[test]
    fn indices_out_of_range_are_refused_naming_the_gather() {
        let g = lookup();
        let ids = |v: [f32; 2]| [ArrayD::from_shape_vec(IxDyn(&[2]), v.to_vec()).unwrap()];
        // ONNX's range is [-n, n): -3 and 2 are in, 3 and -4 out.
        assert_eq!(check_indices(&g, &ids([-3.0, 2.0])), Ok(()));
        for bad in [3.0, -4.0, f32::NAN] {
            let e = check_indices(&g, &ids([0.0, bad])).unwrap_err().to_string();
            assert!(
                e.contains("`ids`") && e.contains("`g` (Gather)") && e.contains("3 rows"),
                "{e}"
            );
        }
        // Random inputs stay inside.
        assert_eq!(check_indices(&g, &random_inputs(&g, 7)), Ok(()));
    }

    #[test]
    fn sizes_past_i32_and_empty_tensors_are_refused_naming_the_node() {
        let mut b = GraphBuilder::new("big");
        let x = b.input("x", &[1 << 20, 1], DType::F32);
        let w = b.input("w", &[1, 1 << 20], DType::F32);
        let y = b.node("mm", Op::MatMul, &[x, w]).unwrap();
        b.output(y);
        let e = b.finish().unwrap().check_sizes().unwrap_err().to_string();
        assert!(
            e.contains("`mm` (MatMul)") && e.contains("1099511627776 elements"),
            "{e}"
        );
        let mut b = GraphBuilder::new("empty");
        let x = b.input("x", &[0, 4], DType::F32);
        let y = b.relu("r", x).unwrap();
        b.output(y);
        let e = b.finish().unwrap().check_sizes().unwrap_err().to_string();
        assert!(
            e.contains("`x` (an input of the graph)") && e.contains("no elements"),
            "{e}"
        );
        // An empty input nothing reads (CastLike's `like`, whose type is all it gives).
        let mut b = GraphBuilder::new("unread");
        let x = b.input("x", &[3, 4], DType::F32);
        b.input("like", &[0], DType::F32);
        let y = b.relu("r", x).unwrap();
        b.output(y);
        assert_eq!(b.finish().unwrap().check_sizes(), Ok(()));
    }
}
