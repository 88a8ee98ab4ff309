//! Horizontal fusion: small kernels independent of each other launched as one.
//!
//! A decode step runs about ten kernels per layer, and many do little: a cache write
//! of one token's keys, another of its values, the gathers of the token's embedding
//! and of its rotary tables. Each costs a launch (about 2.5 µs on an H200 inside a CUDA
//! graph) however little it does. After partition and lowering, this pass walks the
//! groups in run order and gives each *small* group's kernel to an earlier small one it
//! is *independent* of ([`fuse`]); the joined kernel ([`join`]) runs where the first of
//! its parts ran, its blocks split between the parts' bodies.
//!
//! The rule:
//! - **small**: a group that is not an anchor (products, convolutions and attention run
//!   on templates sized to fill the GPU), lowered to exactly one kernel with no global
//!   temporaries, no matrix fragments and no asynchronous copies; the joined kernel's
//!   blocks, all parts together, at most the target's multiprocessors. Under that bound
//!   every part's blocks run side by side in one wave, so the joined kernel takes about
//!   as long as its longest part instead of the sum of the parts and their launches;
//!   past it the parts would queue behind each other anyway.
//! - **independent**: a later group moves up to an earlier kernel only past groups it
//!   has no dependence on, that earlier kernel's parts included: neither writes a buffer
//!   the other reads or writes. Buffers are compared as the plan places them: a slice of
//!   a Concat is its Concat's buffer, a cache updated in place is its input's
//!   (`weft_graph::partition::in_place`); intermediates sharing a reused slot are planned
//!   after this pass, over the joined order ([`crate::plan::Plan::ordered`]).
//! - **threads**: parts of equal block shape keep it; otherwise the joined block is
//!   one-dimensional with the most threads of any part, each part's thread indices
//!   taken from it (x first, so warps hold the same threads), and a part with fewer
//!   threads runs under `threadIdx.x < its threads`. Such a guarded part may hold no
//!   barrier and no subgroup shuffle (the threads left out would not reach it); parts
//!   with all the threads may. Shared memory: the parts' arrays side by side, within the
//!   target's limit.
//!
//! `--disable-pass horizontal` ([`KEY`]) leaves every kernel alone.

mod join;

use std::collections::HashSet;

use weft_codegen_common::TargetLimits;
use weft_graph::partition::{GroupKind, Partition, in_place};
use weft_graph::{Graph, TensorId};
use weft_ir::kernel::LoweredFunc;

/// How a group's kernel runs (defined beside the lowered group that carries it, so that
/// lowering does not import this module).
pub use crate::lower::Horizontal;
use crate::lower::LoweredGroup;
use join::{Part, blocks, join};

/// The key of `CompileOptions::disabled` that leaves every kernel alone.
pub const KEY: &str = "horizontal";

/// Where each group's kernels run: its own index, or the index of the group whose
/// kernel carries it (what the plan orders liveness by).
pub fn positions(groups: &[LoweredGroup]) -> Vec<usize> {
    groups
        .iter()
        .enumerate()
        .map(|(i, g)| match g.horizontal {
            Horizontal::CarriedBy(c) => c,
            Horizontal::Alone | Horizontal::Carries(_) => i,
        })
        .collect()
}

/// The buffers a group reads and writes, as the plan places them.
struct Touches {
    reads: HashSet<TensorId>,
    writes: HashSet<TensorId>,
}

impl Touches {
    /// Whether running `self` and `other` in either order (or at once) could differ.
    fn conflicts(&self, other: &Touches) -> bool {
        !self.writes.is_disjoint(&other.reads)
            || !self.writes.is_disjoint(&other.writes)
            || !other.writes.is_disjoint(&self.reads)
    }
}

/// The buffers each group's kernels read and write: a tensor's buffer is its Concat's
/// where it is a slice of one, its input's where its node updates that in place.
fn touches(g: &Graph, partition: &Partition, groups: &[LoweredGroup]) -> Vec<Touches> {
    let mut alias: std::collections::HashMap<TensorId, TensorId> = Default::default();
    for gr in &partition.groups {
        if in_place(g, gr.root) {
            alias.insert(gr.output, g.nodes[gr.root.0].inputs[0]);
        }
    }
    let home = |t: TensorId| {
        let t = partition.home(t);
        alias.get(&t).copied().unwrap_or(t)
    };
    groups
        .iter()
        .map(|gr| {
            let mut out = Touches {
                reads: HashSet::new(),
                writes: HashSet::new(),
            };
            for (param, &t) in gr.kernels.params.iter().zip(&gr.params) {
                let id = match param {
                    weft_ir::func::Param::Buffer(b) => b.id(),
                    weft_ir::func::Param::Scalar(_) => continue,
                };
                for k in &gr.kernels.kernels {
                    for (b, access) in k.buffer_params() {
                        if b.id() == id {
                            if access.reads() {
                                out.reads.insert(home(t));
                            }
                            if access.writes() {
                                out.writes.insert(home(t));
                            }
                        }
                    }
                }
            }
            out
        })
        .collect()
}

/// Whether group `i` may be a part of a joined kernel of at most `bound` blocks.
fn small(partition: &Partition, gr: &LoweredGroup, i: usize, bound: u64) -> bool {
    let [k] = gr.kernels.kernels.as_slice() else {
        return false;
    };
    partition.groups[i].kind != GroupKind::Anchor
        && gr.kernels.temps.is_empty()
        && k.fragments.is_empty()
        && !k.async_copies
        && k.tensor_maps().is_empty()
        && k.mbarriers().is_empty()
        && blocks(k) <= bound
}

/// Joins the kernels of small, independent groups (the module's rule), greedily in run
/// order: each small group goes to the latest earlier joined kernel it can move up to
/// and fit in. Returns one line per joined kernel, saying what it holds and why.
pub(crate) fn fuse(
    g: &Graph,
    partition: &Partition,
    groups: &mut [LoweredGroup],
    limits: &TargetLimits,
) -> Vec<String> {
    let bound = limits.multiprocessors;
    let touched = touches(g, partition, groups);
    // Units of the new run order: the groups each kernel runs, the first its carrier.
    let mut units: Vec<Vec<usize>> = Vec::new();
    let mut joined: Vec<Option<(LoweredFunc, Vec<TensorId>)>> = Vec::new();
    for i in 0..groups.len() {
        if small(partition, &groups[i], i, bound) {
            let mut to = None;
            for (u, members) in units.iter().enumerate().rev() {
                if members.iter().any(|&m| touched[m].conflicts(&touched[i])) {
                    break;
                }
                let carrier = members[0];
                if !small(partition, &groups[carrier], carrier, bound) {
                    continue;
                }
                let total: u64 = members
                    .iter()
                    .chain([&i])
                    .map(|&m| blocks(&groups[m].kernels.kernels[0]))
                    .sum();
                if total > bound {
                    continue;
                }
                let parts: Vec<Part<'_>> = members
                    .iter()
                    .chain([&i])
                    .map(|&m| Part {
                        func: &groups[m].kernels,
                        tensors: &groups[m].params,
                    })
                    .collect();
                if let Ok(j) = join(&parts, limits) {
                    to = Some((u, j));
                    break;
                }
            }
            if let Some((u, j)) = to {
                units[u].push(i);
                joined[u] = Some(j);
                continue;
            }
        }
        units.push(vec![i]);
        joined.push(None);
    }
    let mut lines = Vec::new();
    for (members, j) in units.into_iter().zip(joined) {
        let Some((func, params)) = j else { continue };
        let carrier = members[0];
        let rest = members[1..].to_vec();
        let k = &func.kernels[0];
        let names: Vec<String> = members
            .iter()
            .map(|&m| groups[m].func.name.clone())
            .collect();
        let why = format!(
            "horizontal fusion: {} independent small kernels as one ({} blocks ≤ {} multiprocessors, {} threads)",
            members.len(),
            blocks(k),
            bound,
            k.threads_per_block()
        );
        lines.push(format!("{}: {why}", names.join(" + ")));
        let carrier_name = groups[carrier].func.name.clone();
        for &m in &rest {
            let gr = &mut groups[m];
            gr.schedule = format!("{}; runs in {carrier_name}'s kernel ({why})", gr.schedule);
            gr.kernels.kernels.clear();
            gr.kernels.params.clear();
            gr.params.clear();
            gr.horizontal = Horizontal::CarriedBy(carrier);
        }
        let gr = &mut groups[carrier];
        gr.schedule = format!(
            "{}; one kernel with {} ({why})",
            gr.schedule,
            names[1..].join(", ")
        );
        gr.kernels = func;
        gr.params = params;
        gr.horizontal = Horizontal::Carries(rest);
    }
    lines
}
