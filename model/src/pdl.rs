//! Early launches for the kernels that prefetch before they wait (CUDA's programmatic
//! dependent launch, sm_90 and later).
//!
//! The runtime launches every CUDA kernel with programmatic dependence on the one before
//! it, and every kernel waits (`griddepcontrol.wait`) before it touches memory the kernel
//! before may write. Without a trigger in that kernel, the next one is launched only
//! once every block of it has exited, so the wait saves the launch's latency and no
//! more. A skinny product compiled with [`crate::CompileOptions::weight_prefetch`]
//! places its own wait ([`GridControl::Wait`]) after prefetching the rows of its weight
//! each thread will read ([`weft_kernels::gemv::template_prefetched`]): that is worth
//! something only if its blocks are placed while the kernel before still runs — on the
//! multiprocessors a decode step's narrow kernels leave idle (the attention's combine
//! runs 16 blocks on 132, a 2048-column product 64). So the kernel before each of them
//! lets it launch as soon as it has itself started ([`GridControl::LaunchDependents`]
//! right after its own wait): the next kernel's blocks fill what is free, prefetch, and
//! wait.
//!
//! Only there: an early trigger in every kernel made grids of several waves slower (an
//! H100, ResNet-50 fp32: 742 → 920 µs, `docs/timing.md`), the next kernel's waiting
//! blocks holding multiprocessors the running one's later waves wanted. A trigger does
//! not reorder anything: the next kernel still waits for this one to finish and its
//! writes to be visible before it reads what this one wrote.

use weft_graph::Graph;
use weft_ir::func::{GridControl, Param};
use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam};

use crate::lower::LoweredGroup;

/// What a group's schedule line says when its kernel lets the next launch early.
pub const TRIGGER_NOTE: &str =
    "; lets the next kernel launch once it has started (that one prefetches before it waits)";

/// `kernel` letting the next kernel launch once it has started: right after its own wait
/// where it places one, else first in its body (after the wait every kernel starts
/// with).
fn trigger_after_wait(kernel: &mut Kernel) {
    let trigger = KStmt::Grid(GridControl::LaunchDependents);
    if kernel.waits_explicitly() {
        kernel.body = kernel.body.rewrite(&mut |s| match s {
            KStmt::Grid(GridControl::Wait) => {
                KStmt::Seq(vec![KStmt::Grid(GridControl::Wait), trigger.clone()])
            }
            other => other,
        });
    } else {
        let body = std::mem::replace(&mut kernel.body, KStmt::Seq(Vec::new()));
        kernel.body = KStmt::seq(vec![trigger, body]);
    }
}

/// Makes the kernel before each kernel that waits explicitly trigger its launch early
/// (the groups in run order, a group's kernels in order); returns how many kernels now
/// trigger.
pub fn launch_early(groups: &mut [LoweredGroup]) -> usize {
    // (group, kernel) of every kernel in run order: groups carried by another launch
    // nothing and hold none.
    let order: Vec<(usize, usize)> = groups
        .iter()
        .enumerate()
        .flat_map(|(g, gr)| (0..gr.kernels.kernels.len()).map(move |k| (g, k)))
        .collect();
    let before: Vec<(usize, usize)> = order
        .windows(2)
        .filter(|w| {
            let (g, k) = w[1];
            groups[g].kernels.kernels[k].waits_explicitly()
        })
        .map(|w| w[0])
        .collect();
    for &(g, k) in &before {
        trigger_after_wait(&mut groups[g].kernels.kernels[k]);
        let schedule = &mut groups[g].schedule;
        if !schedule.ends_with(TRIGGER_NOTE) {
            schedule.push_str(TRIGGER_NOTE);
        }
    }
    before.len()
}

/// Marks what the kernels that place their own wait read of the graph's constants (the
/// weights: no kernel of the run writes them) [`Access::Constant`], the one kind of
/// buffer a kernel may load before that wait (`weft_kernels::gemv::Lead::Loads` does,
/// and the emitters check it). Returns how many parameters were marked.
pub fn mark_constants(g: &Graph, groups: &mut [LoweredGroup]) -> usize {
    let mut marked = 0;
    for group in groups {
        // The group's function parameters and the tensors they hold, in order.
        let constants: Vec<u64> = group
            .kernels
            .params
            .iter()
            .zip(&group.params)
            .filter_map(|(p, &t)| match p {
                Param::Buffer(b) if g.tensor(t).is_constant() => Some(b.id()),
                Param::Buffer(_) | Param::Scalar(_) => None,
            })
            .collect();
        for kernel in &mut group.kernels.kernels {
            if !kernel.waits_explicitly() {
                continue;
            }
            for p in &mut kernel.params {
                if let KernelParam::Buffer { buffer, access } = p
                    && *access == Access::Read
                    && constants.contains(&buffer.id())
                {
                    *access = Access::Constant;
                    marked += 1;
                }
            }
        }
    }
    marked
}
