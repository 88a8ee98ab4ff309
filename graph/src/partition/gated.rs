//! A gated MLP's activation stored by the gate/up product's kernel (issue 60, the decode
//! step): `silu(gu[.., :i]) · gu[.., i:]`, where `gu` is the product of the gate's and
//! the up projection's weights side by side (the siblings pass), becomes part of the
//! product's group ([`Group::gated`]) instead of a kernel of its own.
//!
//! At a decode step's few rows that kernel reads `2·i` values and writes `i`, about the
//! cost of its launch (2.2–2.7 µs a layer on the H200, ~50 µs of TinyLlama's 22-layer
//! step). The skinny-product template can store the activation itself
//! (`weft_kernels::gemv::template_gated`): a block owns the same columns of both halves,
//! so both sums of each output meet in the block after its combine, and `gu` never
//! reaches memory.
//!
//! **The rule**: the group rooted at `Mul(Silu(gate), up)` (either order) folds into the
//! group of the product `p` where `gate` and `up` are Slices of `p`'s output along its
//! last axis — `gate` its first half, `up` its second, every other axis whole — that are
//! its only readers; the Mul's group computes nothing else (its prologue is the two
//! slices and the Silu, no epilogue) and is placed in no Concat; `p` is a MatMul (not a
//! Gemm, whose alpha, beta and C the template would not apply) of at most `max_rows` rows (the skinny template's, which the model compiler passes)
//! with no epilogue, whose output is no graph output. The model compiler folds only when
//! asked (`CompileOptions::gated_store`): the fused kernel is not timed yet.
//!
//! The graph is unchanged: the float64 evaluator, the passes and the import never see
//! the fold.

use super::{Group, GroupKind, Partition, inputs_of, skinny};
use std::collections::HashMap;

use crate::graph::{Graph, NodeId, TensorId};
use crate::op::{Binary, Op, Unary};

/// The nodes of a gated activation folded into a product's group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gated {
    /// The Slice of the product's first half (the gate).
    pub gate: NodeId,
    /// The Silu of the gate.
    pub act: NodeId,
    /// The Slice of the product's second half (the up projection).
    pub up: NodeId,
    /// The Mul of the two, whose output the group stores.
    pub mul: NodeId,
}

impl Gated {
    /// Its nodes in graph order.
    pub fn nodes(&self) -> [NodeId; 4] {
        let mut n = [self.gate, self.act, self.up, self.mul];
        n.sort();
        n
    }
}

/// Folds each gated activation the rule takes into its product's group, in `p`: the
/// Mul's group goes, and the product's group stores the Mul's output. Returns how many
/// it folded.
pub fn fold_gated(g: &Graph, p: &mut Partition, max_rows: usize) -> usize {
    let links = Links {
        producers: g.producers(),
        consumers: g.consumers(),
    };
    let mut gone = Vec::new();
    for (mi, mul_group) in p.groups.iter().enumerate() {
        let Some((gated, product)) = gated_of(g, &links, mul_group, max_rows) else {
            continue;
        };
        let Some(pi) = p.groups.iter().position(|gr| {
            gr.root == product
                && gr.kind == GroupKind::Anchor
                && gr.epilogue.is_empty()
                && gr.gated.is_none()
                && gr.slice.is_none()
                && gr.output == g.nodes[product.0].output
        }) else {
            continue;
        };
        gone.push((mi, pi, gated));
    }
    for &(mi, pi, gated) in &gone {
        let output = p.groups[mi].output;
        let anchor = &mut p.groups[pi];
        anchor.gated = Some(gated);
        anchor.output = output;
        anchor.inputs = inputs_of(g, anchor);
    }
    let groups = std::mem::take(&mut p.groups);
    p.groups = groups
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !gone.iter().any(|&(mi, _, _)| mi == *i))
        .map(|(_, gr)| gr)
        .collect();
    // Groups run in the order of their last node; the product's is now the Mul.
    p.groups.sort_by_key(|gr| gr.nodes().map(|n| n.0).max());
    gone.len()
}

/// The graph's producers and readers of each tensor, computed once.
struct Links {
    producers: HashMap<TensorId, NodeId>,
    consumers: HashMap<TensorId, Vec<NodeId>>,
}

/// The gated activation `mul_group` computes and the product it reads, where the rule
/// takes them.
fn gated_of(
    g: &Graph,
    links: &Links,
    mul_group: &Group,
    max_rows: usize,
) -> Option<(Gated, NodeId)> {
    let mul = mul_group.root;
    let node = &g.nodes[mul.0];
    if mul_group.kind != GroupKind::Injective
        || node.op != Op::Binary(Binary::Mul)
        || !mul_group.epilogue.is_empty()
        || mul_group.slice.is_some()
        || mul_group.prologue.len() != 3
        || node.inputs.len() != 2
    {
        return None;
    }
    let producer = |t| links.producers.get(&t).copied();
    let silu_of = |t| {
        let act = producer(t)?;
        (g.nodes[act.0].op == Op::Unary(Unary::Silu)).then_some(act)
    };
    let (act, up) = match (silu_of(node.inputs[0]), silu_of(node.inputs[1])) {
        (Some(act), None) => (act, producer(node.inputs[1])?),
        (None, Some(act)) => (act, producer(node.inputs[0])?),
        (Some(_), Some(_)) | (None, None) => return None,
    };
    let gate = producer(g.nodes[act.0].inputs[0])?;
    let gated = Gated { gate, act, up, mul };
    let mut prologue = mul_group.prologue.clone();
    prologue.sort();
    let mut want = vec![gate, act, up];
    want.sort();
    if prologue != want {
        return None;
    }
    let gu = g.nodes[gate.0].inputs[0];
    let product = producer(gu)?;
    // A MatMul: a Gemm's alpha, beta and C would apply to the product, which the
    // template never stores.
    if g.nodes[up.0].inputs[0] != gu
        || g.nodes[product.0].op != Op::MatMul
        || g.outputs.contains(&gu)
        || !skinny::takes(g, product, max_rows)
        || links.consumers.get(&gu).map(Vec::len) != Some(2)
    {
        return None;
    }
    let shape = &g.tensor(gu).shape;
    let last = shape.len().checked_sub(1)?;
    let half = shape[last] / 2;
    let is_half = |s: NodeId, from: usize| match &g.nodes[s.0].op {
        Op::Slice(sl) => (0..shape.len()).all(|d| {
            let (start, size) = if d == last {
                (from, half)
            } else {
                (0, shape[d])
            };
            sl.starts[d] == start && sl.sizes[d] == size && sl.steps[d] == 1
        }),
        _ => false,
    };
    let same_shape = g.tensor(node.output).shape == g.tensor(g.nodes[gate.0].output).shape;
    (shape[last].is_multiple_of(2) && is_half(gate, 0) && is_half(up, half) && same_shape)
        .then_some((gated, product))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::test_graphs::{Variant, gated_mlp};
    use crate::partition::{Shown, partition};

    /// The shared gated MLP at `rows` rows; `swap` multiplies `up · silu(gate)`;
    /// `up_from` moves where the up slice starts.
    fn mlp(rows: usize, swap: bool, up_from: Option<usize>) -> Graph {
        let variant = Variant {
            swap,
            up_from,
            ..Variant::default()
        };
        gated_mlp("mlp", rows, variant)
    }

    fn folded(g: &Graph) -> (Partition, usize, String) {
        let mut p = partition(g);
        let n = fold_gated(g, &mut p, 8);
        let shown = Shown {
            graph: g,
            partition: &p,
            schedules: None,
        }
        .to_string();
        (p, n, shown)
    }

    #[test]
    fn a_gated_activation_joins_its_products_group() {
        for swap in [false, true] {
            let g = mlp(1, swap, None);
            let (p, n, shown) = folded(&g);
            assert_eq!((n, p.groups.len()), (1, 2), "{shown}");
            let gr = &p.groups[0];
            let name = |n: NodeId| g.nodes[n.0].name.as_str();
            let gated = gr.gated.expect("folded");
            assert_eq!(
                gated.nodes().map(name),
                ["gate", "up", "silu", "gated"],
                "{shown}"
            );
            let mul = g.nodes.iter().position(|n| n.name == "gated").unwrap();
            assert_eq!(gr.output, g.nodes[mul].output, "{shown}");
            // It reads the activation and the weight; the down product reads its output.
            let inputs: Vec<&str> = gr
                .inputs
                .iter()
                .map(|&t| g.tensor(t).name.as_str())
                .collect();
            assert_eq!(inputs, ["x", "wgu"], "{shown}");
            assert_eq!(p.groups[1].inputs[0], gr.output);
            assert!(
                shown.contains("gated: gate:Slice, up:Slice, silu:Silu, gated:Mul"),
                "{shown}"
            );
        }
    }

    #[test]
    fn elsewhere_the_activation_keeps_its_kernel() {
        // 9 rows: past the skinny template; the up slice not the second half.
        for g in [mlp(9, false, None), mlp(1, false, Some(32))] {
            let (p, n, shown) = folded(&g);
            assert_eq!((n, p.groups.len()), (0, 3), "{shown}");
            assert!(p.groups.iter().all(|gr| gr.gated.is_none()), "{shown}");
        }
    }
}
