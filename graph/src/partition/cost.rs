//! Fusion by cost: whether a chain of injective nodes is computed inside an anchor's
//! loads (a prologue) or once, by a kernel of its own.
//!
//! A prologue is computed at every load of the anchor, and an anchor loads each element
//! of an input many times: a matrix product's template reads `A[m, k]` once per tile of
//! `N` it computes, an implicit GEMM reads an input pixel once per filter tap and per
//! tile of output channels. A chain worth `W` operations an element read `R` times costs
//! `W·R` operations an element inside the anchor — computed in the load path, where it
//! also holds up the template's copy pipeline — against `W` operations plus one store
//! and one load of the tensor as a kernel of its own. PyTorch exports GELU as `Div, Erf,
//! Add, Mul, Mul`; inlined into BERT-base's FFN down-projection it made that product 8×
//! slower (73.8 µs against 9 µs on the H200, issue 59).
//!
//! **The rule**: a prologue chain stays in the anchor's loads while `W·R ≤`
//! [`PROLOGUE_BOUND`]; past it the chain becomes a kernel of its own. `W` is the chain's
//! operations per element as the lowering writes them ([`work`]: each arithmetic,
//! comparison, select or cast 1, each transcendental intrinsic 4, repeated
//! subexpressions once, a producer's work counted once per use of its value); `R` is
//! `max(1, macs / elements of the input / READ_TILE)` ([`reads`]). Layout changes
//! (reshape, transpose, slice) are index arithmetic only: `W = 0`, always inlined.
//!
//! A product the skinny-product template computes (a decode step's few rows) reuses no
//! loaded element of `a`: [`super::skinny`] prices its `a`'s chains against the bytes
//! of `b` it streams instead ([`super::Rule::Skinny`]).

use std::cell::RefCell;
use std::collections::HashMap;

use weft_ir::dtype::DType;
use weft_ir::expr::{Expr, Intrinsic, Var};

use super::skinny;
use super::{Decision, Group, GroupKind, Pricing, Rule};
use crate::graph::{Graph, NodeId, TensorId};
use crate::op::{Anchor, Inline, Role};
use crate::tensor::Tensor;

/// The key that turns the rule off where graph passes are left out
/// (`--disable-pass fusion-cost`): every prologue then stays in its anchor's loads.
pub const KEY: &str = "fusion-cost";

/// The key that prices convolutions' and products' prologues by the tiled rule again
/// instead of the staged rule ([`staged`]): `--disable-pass staged-prologue`.
pub const STAGED_KEY: &str = "staged-prologue";

/// Whether the staged rule prices the chain into input `input` of `anchor`: a dense
/// convolution or a matrix product, whose tiled templates stage each operand tile by tile
/// through shared memory — on CUDA and HIP by asynchronous copies (`cp.async`, Hopper's
/// bulk tensor copies) that move a stored operand without registers and keep several k
/// steps in flight. An operand computed at its loads goes through registers instead: the
/// copies of a step become loads that the step waits on, and the template's pipeline is
/// gone whatever the chain's arithmetic costs. So under this rule a chain that computes
/// anything (`W > 0`) is a kernel of its own, and only layout changes (`W = 0`: index
/// arithmetic) stay in the loads. Measured on the H200 (seventh session, fp16, batch 1,
/// the same binary with the tiled rule's bound and with bound 0): DenseNet-121 (batch
/// norm + ReLU before every 1×1 convolution: `W` = 3, read once, 3 ≤ 64 inlined by the
/// tiled rule) 1.229 → 0.800 ms, at batch 8 1.773 → 1.183 ms; EfficientNet-B0 (the
/// squeeze-and-excitation scale before each projection) 383 → 324 µs; GoogLeNet,
/// ConvNeXt-tiny, ResNet-50 and Inception-v3 unchanged (no chain of theirs computes).
///
/// Fused attention stages its query tile the same way, so its queries (input 0) are
/// priced by this rule where a head has many rows ([`ATTENTION_STAGED_ROWS`] or
/// more): a rotary embedding computed at those loads is four scalar loads and a few
/// operations an element, in the one phase every block waits on before its first key
/// step. Measured on the H200 (tenth session, call 17: the Llama-shaped decoder's
/// queries' rotary stored by a kernel of its own): its attention 26 → 17.8 µs a layer at
/// batch 8 × 128, the model 269 → 265 µs at batch 1 and 816 → 803 µs at batch 8. A
/// decode step's queries (one position) stay in the loads. Keys and
/// values keep the tiled rule with their broadcast ([`before_broadcast`]); their scale
/// factors are the attention's own (`passes::attention`). The skinny products have
/// their own rule ([`skinny`]).
pub fn staged(g: &Graph, anchor: NodeId, input: usize) -> bool {
    let n = &g.nodes[anchor.0];
    match n.op.role() {
        // Dense convolutions run as implicit GEMMs on the matmul templates; grouped and
        // depthwise ones have templates of their own that load through registers.
        Role::Anchor(Anchor::Conv(c)) => c.groups == 1,
        Role::Anchor(Anchor::Product(_)) => true,
        Role::Anchor(Anchor::Attention(_)) => {
            let rows = |q: TensorId| {
                let shape = &g.tensor(q).shape;
                shape.len().checked_sub(2).map_or(0, |r| shape[r])
            };
            input == 0
                && n.inputs
                    .first()
                    .is_some_and(|&q| rows(q) >= ATTENTION_STAGED_ROWS)
        }
        Role::Reduction(_) | Role::Injective(_) | Role::Join { .. } | Role::Update(_) => false,
    }
}

/// The fewest query rows (a head's, the queries' second-last axis) at which the staged
/// rule prices an attention's queries ([`staged`]): one query tile of the template's
/// largest. A decode step has one position a sequence (8 rows where the grouped heads
/// are folded into the rows, as `zoo:llama` does), a short prompt a few: each block
/// reads its queries once, one load a thread, and a kernel of their own would add a
/// launch to a step that is mostly launches.
pub const ATTENTION_STAGED_ROWS: usize = 64;

/// The largest `W·R` (operations an element, times reads an element) a prologue may
/// cost inside an anchor's loads. About where recomputing costs what one more store and
/// load of an f16 element would on a GPU of today (a few TB/s against tens of Tops/s), and
/// below the GELU-in-a-down-projection case that motivated it (`W ≈ 30`, `R = 6`).
pub const PROLOGUE_BOUND: f64 = 64.0;

/// The tile width along which the anchor templates reuse a loaded element: an element
/// of a product's `A` is read once per `READ_TILE` columns of the output.
pub const READ_TILE: f64 = 128.0;

/// Unique operations an expression may have before counting stops (the rule only needs
/// to know that it is past the bound).
const COUNT_LIMIT: usize = 96;

/// How many times anchor `anchor` reads each element of its input `input` (a position
/// in its inputs): the multiply-adds each element takes part in, over the tile width
/// that reuses a load, at least 1.
pub fn reads(g: &Graph, anchor: NodeId, input: usize) -> f64 {
    let n = &g.nodes[anchor.0];
    let tiled = match n.op.role() {
        // Fused attention keeps a tile of queries on chip while it walks the keys: each
        // query is read once; keys and values once per tile of queries.
        Role::Anchor(Anchor::Attention(_)) => input != 0,
        Role::Anchor(Anchor::Conv(_) | Anchor::Product(_))
        | Role::Reduction(_)
        | Role::Injective(_)
        | Role::Join { .. }
        | Role::Update(_) => true,
    };
    if !tiled {
        return 1.0;
    }
    let tensors: Vec<&Tensor> = n.inputs.iter().map(|&t| g.tensor(t)).collect();
    let macs = n.op.def().macs(&tensors, g.tensor(n.output));
    let numel = tensors.get(input).map_or(1, |t| t.numel()).max(1) as f64;
    (macs / numel / READ_TILE).max(1.0)
}

/// The rule over every anchor's prologue chains: a chain past its bound (the skinny
/// rule's where `pricing` gives the skinny template and the anchor is a product it takes,
/// else 0 for a staged template where `pricing.staged` ([`staged`]), else
/// [`PROLOGUE_BOUND`]) leaves the anchor's group for a group of its own, rooted at the
/// node whose output the anchor reads. Every chain that computes anything is recorded,
/// moved or not.
pub(super) fn split(
    g: &Graph,
    groups: &mut Vec<Group>,
    group_of: &mut HashMap<NodeId, usize>,
    pricing: Pricing,
) -> Vec<Decision> {
    let mut decisions = Vec::new();
    for gi in 0..groups.len() {
        if groups[gi].kind != GroupKind::Anchor || groups[gi].prologue.is_empty() {
            continue;
        }
        let root = groups[gi].root;
        // Each prologue node has one reader, so the chains feeding the anchor's inputs
        // are disjoint trees.
        let producer: HashMap<TensorId, NodeId> = groups[gi]
            .prologue
            .iter()
            .map(|&n| (g.nodes[n.0].output, n))
            .collect();
        for (k, &t) in g.nodes[root.0].inputs.iter().enumerate() {
            let Some(&top) = producer.get(&t) else {
                continue;
            };
            if !groups[gi].prologue.contains(&top) {
                continue; // the anchor reads one tensor twice: decided at its first read
            }
            let chain = feeders(g, top, &producer);
            let work = work(g, &chain, top);
            if work == 0.0 {
                continue;
            }
            let tiled = if pricing.staged && staged(g, root, k) {
                Rule::Staged
            } else {
                Rule::Tiled
            };
            let (reads, rule) = pricing
                .skinny
                .and_then(|t| skinny::priced(g, root, k, t))
                .unwrap_or_else(|| (reads(g, root, k), tiled));
            let (stored, spread) = before_broadcast(g, top, &producer);
            let inlined = work * reads * spread <= rule.bound();
            if !inlined {
                // What goes is the computing part below the broadcast (all of the chain
                // where there is none); the layout changes after it stay in the loads.
                let moved = feeders(g, stored, &producer);
                groups[gi].prologue.retain(|n| !moved.contains(n));
                let new = groups.len();
                for &n in &moved {
                    group_of.insert(n, new);
                }
                groups.push(Group {
                    kind: GroupKind::Injective,
                    root: stored,
                    prologue: moved.iter().copied().filter(|&n| n != stored).collect(),
                    epilogue: Vec::new(),
                    output: g.nodes[stored.0].output,
                    inputs: Vec::new(),
                    slice: None,
                    row_norm: None,
                    gated: None,
                });
            }
            decisions.push(Decision {
                anchor: root,
                input: k,
                chain,
                work,
                reads,
                spread,
                stored,
                rule,
                inlined,
            });
        }
    }
    decisions
}

/// A node's own operations per element, and how many times its expression uses each
/// input's value.
pub fn own_work(g: &Graph, node: NodeId) -> (f64, Vec<usize>) {
    let n = &g.nodes[node.0];
    let probe = Probe {
        g,
        node: n,
        uses: RefCell::new(vec![0; n.inputs.len()]),
    };
    let rank = g.tensor(n.output).shape.len();
    let idx: Vec<Expr> = (0..rank)
        .map(|d| Expr::Var(Var::new(format!("i{d}"), DType::I32)))
        .collect();
    let own = match n.op.def().inline(&probe, &idx) {
        Some(e) => count(&e) as f64,
        // Not computed inline: never a prologue, so no cost applies.
        None => 0.0,
    };
    (own, probe.uses.into_inner())
}

/// Where a chain that leaves its anchor's loads is stored, and how many elements of the
/// anchor's input each stored element becomes: walking down from `top` through layout
/// changes (no work of their own, one input from the chain), the first node that
/// computes. Where the layout changes between it and `top` broadcast (an `Expand`:
/// grouped KV heads repeated over their query heads), computing at the loads costs the
/// chain's work once per copy, and storing after the broadcast would write every copy:
/// so the chain is priced per element of that node's output (`spread` = the broadcast's
/// factor) and stored there, the layout changes staying in the anchor's loads as views.
/// Without a broadcast: `(top, 1)`, the whole chain priced and stored as it is read.
fn before_broadcast(g: &Graph, top: NodeId, producer: &HashMap<TensorId, NodeId>) -> (NodeId, f64) {
    let mut n = top;
    while own_work(g, n).0 == 0.0 {
        let from_chain: Vec<NodeId> = g.nodes[n.0]
            .inputs
            .iter()
            .filter_map(|t| producer.get(t).copied())
            .collect();
        match from_chain.as_slice() {
            [p] => n = *p,
            _ => return (top, 1.0),
        }
    }
    let read = g.tensor(g.nodes[top.0].output).numel() as f64;
    let stored = g.tensor(g.nodes[n.0].output).numel().max(1) as f64;
    if n == top || read <= stored {
        return (top, 1.0);
    }
    (n, read / stored)
}

/// `root` and the prologue nodes (`producer`: the group's, by their outputs) that feed
/// it, sorted: the chain a prologue input is computed by, or the part of it below a
/// broadcast.
fn feeders(g: &Graph, root: NodeId, producer: &HashMap<TensorId, NodeId>) -> Vec<NodeId> {
    let mut nodes = vec![root];
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        for i in &g.nodes[n.0].inputs {
            if let Some(&p) = producer.get(i).filter(|p| !nodes.contains(p)) {
                nodes.push(p);
                stack.push(p);
            }
        }
    }
    nodes.sort();
    nodes
}

/// The work per element of the chain of `nodes` (a prologue subtree, producers before
/// readers) delivered through `top`, its node read by the anchor: each node's own work
/// plus, per use of an input produced inside the chain, that producer's work.
pub fn work(g: &Graph, nodes: &[NodeId], top: NodeId) -> f64 {
    let mut sorted = nodes.to_vec();
    sorted.sort();
    let mut total: Vec<(NodeId, f64)> = Vec::with_capacity(sorted.len());
    for &n in &sorted {
        let (own, uses) = own_work(g, n);
        let mut w = own;
        for (i, &t) in g.nodes[n.0].inputs.iter().enumerate() {
            if let Some(&(_, pw)) = total.iter().find(|(p, _)| g.nodes[p.0].output == t) {
                w += pw * uses[i] as f64;
            }
        }
        total.push((n, w));
    }
    total
        .iter()
        .find(|(n, _)| *n == top)
        .map_or(0.0, |&(_, w)| w)
}

/// The [`Inline`] the rule calls an op's expression through: each input a variable, each
/// call counted.
struct Probe<'a> {
    g: &'a Graph,
    node: &'a crate::graph::Node,
    uses: RefCell<Vec<usize>>,
}

impl Inline for Probe<'_> {
    fn input(&self, i: usize, _idx: &[Expr]) -> Expr {
        if let Some(u) = self.uses.borrow_mut().get_mut(i) {
            *u += 1;
        }
        Expr::Var(Var::new(format!("x{i}"), DType::F32))
    }

    fn input_count(&self) -> usize {
        self.node.inputs.len()
    }

    fn input_tensor(&self, i: usize) -> &Tensor {
        self.g.tensor(self.node.inputs[i])
    }

    fn output(&self) -> &Tensor {
        self.g.tensor(self.node.output)
    }
}

/// Operations of `e`, each distinct subexpression once (a compiler computes a repeated
/// one once), index arithmetic of loads included; at most [`COUNT_LIMIT`].
fn count(e: &Expr) -> usize {
    let mut seen: Vec<&Expr> = Vec::new();
    let mut cost = 0;
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if cost > COUNT_LIMIT {
            break;
        }
        let (own, children): (usize, Vec<&Expr>) = match x {
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) | Expr::Builtin(_) => {
                continue;
            }
            Expr::Binary(_, a, b) => (1, vec![a.as_ref(), b.as_ref()]),
            Expr::Unary(_, a) | Expr::Cast(_, a) => (1, vec![a.as_ref()]),
            Expr::Select(c, a, b) => (1, vec![c.as_ref(), a.as_ref(), b.as_ref()]),
            Expr::Call(f, args) => (intrinsic_cost(*f), args.iter().collect()),
            Expr::Load { indices, .. } => (1, indices.iter().collect()),
            Expr::Reduce(_) => (COUNT_LIMIT, Vec::new()),
        };
        if seen.contains(&x) {
            continue;
        }
        seen.push(x);
        cost += own;
        stack.extend(children);
    }
    cost
}

/// A transcendental is a few instructions on a GPU's special-function unit and a
/// range reduction around it; the rest one instruction.
fn intrinsic_cost(f: Intrinsic) -> usize {
    match f {
        Intrinsic::Exp
        | Intrinsic::Exp2
        | Intrinsic::Log
        | Intrinsic::Sqrt
        | Intrinsic::Rsqrt
        | Intrinsic::Tanh
        | Intrinsic::TanhApprox
        | Intrinsic::Sigmoid
        | Intrinsic::Sin
        | Intrinsic::Cos
        | Intrinsic::Pow => 4,
        Intrinsic::Abs
        | Intrinsic::Floor
        | Intrinsic::Ceil
        | Intrinsic::Fma
        | Intrinsic::ShuffleXor => 1,
    }
}
