//! Graph passes: each a module of its own, each a function from a graph (and the
//! compile's [`PassContext`]) to a graph that computes the same outputs, checked against
//! the float64 reference in its tests ([`testing`]: a small graph in, the rewritten graph
//! out).
//!
//! [`PIPELINE`] lists every pass once, in order, with its key and report name;
//! [`run_pipeline`] runs it once per compile (the model compiler's only way to run
//! passes) and gives one [`PassReport`] per pass. Precision and weight layouts are passes
//! of the list too, of the storage stage, which always runs. How to add one:
//! `docs/architecture.md`, "Adding a graph pass".

mod activations;
mod attention;
mod batch_norm;
mod constants;
mod dead;
mod identity;
mod layer_norm;
mod pipeline;
mod precision;
mod rms_norm;
mod rotary;
mod siblings;
pub mod testing;
mod weight_layout;
mod wide_weights;

pub use activations::recognize_activations;
pub use attention::{GROUPED_ROWS_MAX, group_kv_heads, recognize_attention};
pub use batch_norm::fold_batch_norms;
pub use constants::fold_constants;
pub use dead::remove_dead;
pub use identity::remove_identities;
pub use layer_norm::recognize_layer_norms;
pub use pipeline::{
    EveryKernelFits, PIPELINE, Pass, PassContext, PassEntry, PassReport, Stage, TargetQuery,
    optimize, optimize_in, run_pipeline,
};
pub use precision::{Precision, assign_precision, memory_order};
pub use rms_norm::recognize_rms_norms;
pub use rotary::recognize_rotary;
pub use siblings::merge_sibling_products;
pub use weight_layout::{
    DEPTHWISE_TEMPLATE_MIN_OUTPUTS, DEPTHWISE_TEMPLATE_WINDOW, assign_weight_layouts,
    depthwise_template_pays,
};
pub use wide_weights::split_wide_weights;

use std::collections::HashSet;

use crate::graph::{Graph, NodeId, TensorId};

/// The value of `t` where it is a constant of one element (a scale, an epsilon, a 0).
pub(crate) fn scalar(g: &Graph, t: TensorId) -> Option<f64> {
    let d = g.tensor(t).data.as_ref()?;
    (d.len() == 1).then(|| d.iter().next().map(|&v| f64::from(v)))?
}

/// Removes the nodes `drop` names from `g` (the rest keep their order); how many went.
/// What a rewrite calls once it has put its one node in a matched chain's place.
pub(crate) fn remove_nodes(g: &mut Graph, drop: impl IntoIterator<Item = NodeId>) -> usize {
    let drop: HashSet<usize> = drop.into_iter().map(|n| n.0).collect();
    let mut k = 0;
    g.nodes.retain(|_| {
        let keep = !drop.contains(&k);
        k += 1;
        keep
    });
    drop.len()
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
        // A symbol's axes are graph inputs', which are kept; a constant numbered by it
        // that no node reads any more goes with it.
        symbols: g
            .symbols
            .into_iter()
            .map(|mut s| {
                s.dims = s.dims.into_iter().map(|(t, a)| (re(t), a)).collect();
                s.rows = s
                    .rows
                    .into_iter()
                    .filter(|(t, _)| map[t.0] != usize::MAX)
                    .map(|(t, a)| (re(t), a))
                    .collect();
                s
            })
            .collect(),
    }
}
