//! Graph passes: each a module of its own, each a function from a graph to a graph that
//! computes the same outputs (checked against the float64 reference in its tests).
//!
//! [`optimize`] runs them in the order a compiler wants them: identities out first (so
//! that batch norms meet their convolutions), constants folded, decomposed layer norms
//! made one node, attention (two products and a softmax) made one node, sibling products
//! of one activation (query, key, value) made one product, batch norms folded into
//! the convolutions before them, and what no output needs any more removed.
//! [`assign_precision`] is not among them: it takes the precision a model is compiled
//! for, and runs after them; [`assign_weight_layouts`] runs last (storage only, as the
//! products read their weights).

mod attention;
mod batch_norm;
mod constants;
mod dead;
mod identity;
mod layer_norm;
mod precision;
mod siblings;
mod weight_layout;

pub use attention::recognize_attention;
pub use batch_norm::fold_batch_norms;
pub use constants::fold_constants;
pub use dead::remove_dead;
pub use identity::remove_identities;
pub use layer_norm::recognize_layer_norms;
pub use precision::{Precision, assign_precision, memory_order};
pub use siblings::merge_sibling_products;
pub use weight_layout::assign_weight_layouts;

use std::fmt;

use crate::graph::{Graph, GraphError, TensorId};

/// What one pass changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassReport {
    pub pass: &'static str,
    /// Nodes it removed or rewrote.
    pub changed: usize,
}

impl fmt::Display for PassReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} node(s)", self.pass, self.changed)
    }
}

/// A graph pass: rewrites the graph in place and says how many nodes it changed.
pub type Pass = fn(&mut Graph) -> usize;

/// The passes [`optimize`] runs, in order: the key a user names one by
/// (`weft model run --disable-pass KEY`), its name in reports, and the pass.
pub const PASSES: [(&str, &str, Pass); 7] = [
    ("identities", "remove identities", remove_identities),
    ("constants", "fold constants", fold_constants),
    (
        "layer-norms",
        "recognize layer norms",
        recognize_layer_norms,
    ),
    ("attention", "recognize attention", recognize_attention),
    ("siblings", "merge sibling products", merge_sibling_products),
    (
        "batch-norms",
        "fold batch norms into convolutions",
        fold_batch_norms,
    ),
    ("dead", "remove dead nodes", remove_dead),
];

/// Every pass, in order, on a copy of `graph`; the result is validated.
pub fn optimize(graph: &Graph) -> Result<(Graph, Vec<PassReport>), GraphError> {
    optimize_without(graph, &[])
}

/// [`optimize`] without the passes whose keys ([`PASSES`]) `disabled` names (TVM's
/// `disabled_pass`: an A/B of what one pass does). A key that names no pass is refused.
pub fn optimize_without(
    graph: &Graph,
    disabled: &[String],
) -> Result<(Graph, Vec<PassReport>), GraphError> {
    if let Some(unknown) = disabled
        .iter()
        .find(|d| !PASSES.iter().any(|(key, _, _)| key == d))
    {
        let keys: Vec<&str> = PASSES.iter().map(|(key, _, _)| *key).collect();
        return Err(GraphError::Pass(format!(
            "no pass is called `{unknown}`; the passes are {}",
            keys.join(", ")
        )));
    }
    let mut g = graph.clone();
    let mut reports = Vec::new();
    for (key, pass, run) in PASSES {
        let changed = if disabled.iter().any(|d| d == key) {
            0
        } else {
            run(&mut g)
        };
        reports.push(PassReport { pass, changed });
    }
    let g = compact(g);
    g.validate()?;
    Ok((g, reports))
}

/// The value of `t` where it is a constant of one element (a scale, an epsilon, a 0).
pub(crate) fn scalar(g: &Graph, t: TensorId) -> Option<f64> {
    let d = g.tensor(t).data.as_ref()?;
    (d.len() == 1).then(|| d.iter().next().map(|&v| f64::from(v)))?
}

/// Every read of `from` (node inputs and graph outputs) becomes a read of `to`.
pub(crate) fn replace_uses(g: &mut Graph, from: TensorId, to: TensorId) {
    for n in &mut g.nodes {
        for i in &mut n.inputs {
            if *i == from {
                *i = to;
            }
        }
    }
    for o in &mut g.outputs {
        if *o == from {
            *o = to;
        }
    }
}

/// `g` without the tensors nothing uses (weights of removed nodes), ids renumbered.
pub fn compact(g: Graph) -> Graph {
    let mut used = vec![false; g.tensors.len()];
    for &i in g.inputs.iter().chain(&g.outputs) {
        used[i.0] = true;
    }
    for n in &g.nodes {
        for &i in n.inputs.iter().chain(std::iter::once(&n.output)) {
            used[i.0] = true;
        }
    }
    let mut map = vec![usize::MAX; g.tensors.len()];
    let mut tensors = Vec::new();
    for (i, t) in g.tensors.into_iter().enumerate() {
        if used[i] {
            map[i] = tensors.len();
            tensors.push(t);
        }
    }
    let re = |t: TensorId| TensorId(map[t.0]);
    Graph {
        name: g.name,
        tensors,
        nodes: g
            .nodes
            .into_iter()
            .map(|mut n| {
                n.inputs = n.inputs.into_iter().map(re).collect();
                n.output = re(n.output);
                n
            })
            .collect(),
        inputs: g.inputs.into_iter().map(re).collect(),
        outputs: g.outputs.into_iter().map(re).collect(),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Checking a pass: the graph before and after give the same outputs in float64.

    use ndarray::{ArrayD, IxDyn};

    use crate::graph::Graph;
    use crate::reference::evaluate;

    /// Inputs of the graph's shapes from a fixed sequence in [-1, 1).
    pub(crate) fn inputs(g: &Graph) -> Vec<ArrayD<f64>> {
        let mut seed = 12345u64;
        g.inputs
            .iter()
            .map(|&i| {
                ArrayD::from_shape_fn(IxDyn(&g.tensor(i).shape), |_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
                })
            })
            .collect()
    }

    /// The largest difference between the outputs of `a` and `b` on the same inputs.
    pub(crate) fn max_difference(a: &Graph, b: &Graph) -> f64 {
        let x = inputs(a);
        let (ya, yb) = (evaluate(a, &x).unwrap(), evaluate(b, &x).unwrap());
        assert_eq!(ya.len(), yb.len());
        ya.iter()
            .zip(&yb)
            .map(|(p, q)| {
                assert_eq!(p.shape(), q.shape());
                (p - q).mapv(f64::abs).fold(0.0f64, |m, &v| m.max(v))
            })
            .fold(0.0, f64::max)
    }
}
