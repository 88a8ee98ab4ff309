//! Memory planning: every stored intermediate tensor gets a slot (one device buffer),
//! and a slot is reused by a later tensor of the same dtype once the last kernel reading
//! its tensor has run — liveness over the kernel order, best fit by size. Graph inputs
//! and outputs have buffers of their own (an output must survive the run); weights are
//! uploaded once.
//!
//! Where the target orders dispatches by the buffers they bind (wgpu: WebGPU's usage
//! scopes), a reused slot is not free: [`Reuse::Waiting`] reuses one only where the
//! writing dispatch waits anyway ([`waits`]).

use std::collections::HashMap;

use weft_graph::partition::{Partition, in_place};
use weft_graph::{Graph, TensorId};
use weft_ir::dtype::DType;

use crate::error::MemoryNeed;

mod waits;

/// When a slot may take another tensor, once the last kernel reading its tensor has run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Whenever it is free: the target runs each kernel after the one before it (a CUDA
    /// stream), so where a tensor lives costs no time.
    Always,
    /// Only for a tensor whose writing dispatch waits for the dispatches before it
    /// anyway, on targets that order dispatches by the buffers they bind
    /// (`TargetLimits::usage_barriers`: wgpu puts a barrier before a dispatch that binds
    /// a buffer an earlier dispatch of the run wrote, or writes one an earlier dispatch
    /// used, and runs the others beside the dispatches before them). The other tensors
    /// get slots no earlier dispatch used, while the slots stay within
    /// [`waiting_cap`] of [`Reuse::Always`]'s bytes; past that, they are reused as there.
    Waiting,
    /// Never: every stored intermediate has a buffer of its own (the A/B of
    /// [`Reuse::Waiting`]).
    Never,
}

/// Bytes the slots of [`Reuse::Waiting`] may take where [`Reuse::Always`]'s take `always`:
/// twice as many, or [`WAITING_ALLOWANCE`] more where that is more. A small model's
/// slots are a few MiB, and twice as many still put a barrier before most of the
/// dispatches that would otherwise have none: ShuffleNetV2 at batch 1 on an H200 through
/// Vulkan (2026-12-02, fp16) ran in 295 µs capped at 1.8 MiB against 278 µs with a
/// buffer per intermediate (6.0 MiB).
pub fn waiting_cap(always: usize) -> usize {
    (2 * always).max(always + WAITING_ALLOWANCE)
}

/// The bytes [`Reuse::Waiting`] may always add to [`Reuse::Always`]'s slots: 64 MiB,
/// little beside a discrete GPU's memory or a model's weights.
pub const WAITING_ALLOWANCE: usize = 64 << 20;

impl Reuse {
    /// The names [`crate::compiled::REUSE_ENV`] takes (besides `target`).
    pub const NAMES: [(&'static str, Reuse); 3] = [
        ("always", Reuse::Always),
        ("waiting", Reuse::Waiting),
        ("never", Reuse::Never),
    ];
}

/// Where a tensor lives on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Home {
    /// A graph input, by position.
    Input(usize),
    /// A weight or constant (uploaded once).
    Weight,
    /// A graph output, by position (its own buffer).
    Output(usize),
    /// A reused intermediate buffer.
    Slot(usize),
    /// The buffer of this graph input, which the tensor's node updates in place (a KV
    /// cache: [`weft_graph::partition::in_place`]); a run leaves the input updated.
    InPlace(TensorId),
}

/// One reused buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub dtype: DType,
    /// Elements: the largest tensor it holds.
    pub len: usize,
}

/// The buffer plan of a partitioned graph.
#[derive(Clone, Debug)]
pub struct Plan {
    pub homes: HashMap<TensorId, Home>,
    pub slots: Vec<Slot>,
    /// Bytes of the intermediates without reuse (what planning saved is the difference).
    pub unplanned_bytes: usize,
}

impl Plan {
    /// Plans the buffers of `partition`'s kernels over `g`, each group's kernels run in
    /// partition order.
    pub fn new(g: &Graph, partition: &Partition) -> Plan {
        let order: Vec<usize> = (0..partition.groups.len()).collect();
        Plan::ordered(g, partition, &order)
    }

    /// [`Plan::new`] where group `i`'s kernels run at position `positions[i]`: groups at
    /// the same position run in one kernel, at once (`crate::horizontal`), so a buffer
    /// one of them reads is not free for another's output there.
    pub fn ordered(g: &Graph, partition: &Partition, positions: &[usize]) -> Plan {
        place(g, partition, positions, |_| false, usize::MAX)
    }

    /// [`Plan::ordered`] with slots reused as `reuse` says, `kernels[i]` being how many
    /// kernels group `i` launches (a group of several waits within itself: its output's
    /// writer follows its first kernel).
    pub fn reusing(
        g: &Graph,
        partition: &Partition,
        positions: &[usize],
        kernels: &[usize],
        reuse: Reuse,
    ) -> Plan {
        match reuse {
            Reuse::Always => Plan::ordered(g, partition, positions),
            Reuse::Never => place(g, partition, positions, |_| true, usize::MAX),
            Reuse::Waiting => {
                let always = Plan::ordered(g, partition, positions);
                let unwaited = waits::unwaited(g, partition, positions, kernels, &always.homes);
                place(
                    g,
                    partition,
                    positions,
                    |k| unwaited.contains(&k),
                    waiting_cap(always.slot_bytes()),
                )
            }
        }
    }
}

/// [`Plan::ordered`]'s placing, where a tensor first written at a position `own` holds
/// gets a new slot while the slots stay within `cap` bytes.
fn place(
    g: &Graph,
    partition: &Partition,
    positions: &[usize],
    own: impl Fn(usize) -> bool,
    cap: usize,
) -> Plan {
    let mut homes: HashMap<TensorId, Home> = HashMap::new();
    for (i, &t) in g.inputs.iter().enumerate() {
        homes.insert(t, Home::Input(i));
    }
    for (i, &t) in g.outputs.iter().enumerate() {
        homes.entry(t).or_insert(Home::Output(i));
    }
    for (i, t) in g.tensors.iter().enumerate() {
        if t.is_constant() {
            homes.insert(TensorId(i), Home::Weight);
        }
    }
    for gr in &partition.groups {
        if in_place(g, gr.root) {
            let input = g.nodes[gr.root.0].inputs[0];
            homes.insert(gr.output, Home::InPlace(input));
        }
    }
    // Each stored tensor: the kernel that first writes it and the last that reads it.
    let mut first: HashMap<TensorId, usize> = HashMap::new();
    let mut last: HashMap<TensorId, usize> = HashMap::new();
    // A slice of a Concat is its buffer's: the buffer lives from the first kernel
    // writing any slice to the last reading any (a dense block's whole buffer lives
    // until its transition has read it).
    for (i, gr) in partition.groups.iter().enumerate() {
        let k = positions[i];
        let stored = partition.home(gr.output);
        let f = first.entry(stored).or_insert(k);
        *f = (*f).min(k);
        let l = last.entry(stored).or_insert(k);
        *l = (*l).max(k);
        for &t in &gr.inputs {
            let l = last.entry(partition.home(t)).or_insert(k);
            *l = (*l).max(k);
        }
    }
    let mut order: Vec<TensorId> = first
        .keys()
        .copied()
        .filter(|t| !homes.contains_key(t))
        .collect();
    order.sort_by_key(|t| (first[t], t.0));
    let mut slots: Vec<Slot> = Vec::new();
    // Per slot: the kernel after which it is free again.
    let mut busy_until: Vec<usize> = Vec::new();
    let mut unplanned = 0;
    for t in order {
        let tensor = g.tensor(t);
        let (len, dtype) = (tensor.numel(), tensor.dtype);
        unplanned += len * dtype.bytes();
        let start = first[&t];
        // A tensor whose writer waits for nothing before it takes a slot no earlier
        // kernel used, where the cap allows (a slot reused later may still grow).
        let bytes: usize = slots.iter().map(|s| s.len * s.dtype.bytes()).sum();
        let fresh = own(start) && bytes + len * dtype.bytes() <= cap;
        // Else a slot whose last reader ran before this tensor's writer, same dtype: the
        // smallest that fits, else the largest (grown).
        let free: Vec<usize> = (0..slots.len())
            .filter(|&s| !fresh && busy_until[s] < start && slots[s].dtype == dtype)
            .collect();
        let fit = free
            .iter()
            .copied()
            .filter(|&s| slots[s].len >= len)
            .min_by_key(|&s| slots[s].len)
            .or_else(|| free.iter().copied().max_by_key(|&s| slots[s].len));
        let s = match fit {
            Some(s) => {
                slots[s].len = slots[s].len.max(len);
                s
            }
            None => {
                slots.push(Slot { dtype, len });
                busy_until.push(0);
                slots.len() - 1
            }
        };
        busy_until[s] = last[&t];
        homes.insert(t, Home::Slot(s));
    }
    Plan {
        homes,
        slots,
        unplanned_bytes: unplanned,
    }
}

impl Plan {
    /// Bytes of the reused intermediate buffers.
    pub fn slot_bytes(&self) -> usize {
        self.slots.iter().map(|s| s.len * s.dtype.bytes()).sum()
    }

    /// Peak device bytes of a run: weights, inputs, outputs and the slots.
    pub fn peak_bytes(&self, g: &Graph) -> usize {
        let own: usize = self
            .homes
            .iter()
            .filter(|(_, h)| !matches!(h, Home::Slot(_) | Home::InPlace(_)))
            .map(|(&t, _)| g.tensor(t).numel() * g.tensor(t).dtype.bytes())
            .sum();
        own + self.slot_bytes()
    }

    /// What a run needs of the device's memory ([`Plan::peak_bytes`] in its parts) and
    /// the few largest tensors: what a refusal names.
    pub fn need(&self, g: &Graph) -> MemoryNeed {
        let bytes = |t: TensorId| (g.tensor(t).numel() * g.tensor(t).dtype.bytes()) as u64;
        let (mut weights, mut io) = (0, 0);
        let mut all: Vec<(String, u64, &'static str)> = Vec::new();
        for (&t, home) in &self.homes {
            let what = match home {
                Home::Weight => {
                    weights += bytes(t);
                    "a weight"
                }
                Home::Input(_) => {
                    io += bytes(t);
                    "an input"
                }
                Home::Output(_) => {
                    io += bytes(t);
                    "an output"
                }
                Home::Slot(_) => "an intermediate",
                // Its input's bytes, counted once there.
                Home::InPlace(_) => continue,
            };
            all.push((g.tensor(t).name.clone(), bytes(t), what));
        }
        // Largest first; among equals, by name, so that the message is stable.
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all.truncate(3);
        MemoryNeed {
            bytes: self.peak_bytes(g) as u64,
            weights,
            io,
            intermediates: self.slot_bytes() as u64,
            largest: all,
        }
    }
}

#[cfg(test)]
mod tests;
