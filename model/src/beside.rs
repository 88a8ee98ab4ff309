//! Weights brought into L2 by kernels beside the chain (CUDA).
//!
//! A decode step is a chain of kernels: each skinny product streams its weight from
//! memory, and between some of them run kernels that read almost nothing — the cache
//! write and the split-KV attention between q/k/v and o, the activation between gate/up
//! and down. While those run, memory is idle. [`crate::ahead`] had each product ask L2
//! for the next weights after its stores, and the step grew with the bytes asked: a
//! block does not retire while its requests are outstanding, so the next kernel of the
//! chain, which waits for the product's completion, started later (`docs/l2-ahead.md`).
//!
//! Here the requests come from a kernel of their own, placed after a skinny product that
//! a window follows (kernels that are not skinny products before the next one). It
//! writes nothing, so the CUDA runtime launches it beside the chain: on a second stream,
//! forked off the main one after the product (it starts when the product has finished)
//! and joined at the end of the run, so nothing in the chain waits for it
//! (`weft_runtime`'s CUDA device, "beside the chain"). Its threads issue one bulk
//! prefetch of the copy engine a [`CHUNK_BYTES`] chunk (`cp.async.bulk.prefetch.L2`) of
//! the next products' weights, in run order, up to a budget in bytes: the next one's
//! weight whole, then the start of the one after, and so on. A prefetch changes no
//! value: each product reads its weight as before, from L2 or from memory.
//!
//! `WEFT_L2_BESIDE` (megabytes, `0` off) sets the budget
//! ([`crate::CompileOptions::l2_beside`], default 0). Only where the kernel's dialect
//! writes a prefetch (`TargetLimits::grid_dependency`: CUDA on sm_90 and later); other
//! devices run the kernel in order, which changes nothing but the time.

use weft_codegen_common::TargetLimits;
use weft_graph::Graph;
use weft_graph::partition::Partition;
use weft_ir::expr::{Buffer, Scope};
use weft_ir::func::Param;
use weft_ir::kernel::{KStmt, Kernel};

use crate::ahead::{CHUNK_BYTES, Streamed, prefetch_chunks, products};
use crate::lower::LoweredGroup;

/// Threads of a block of a prefetching kernel: one warp, each thread a request a round.
const THREADS: u32 = 32;

/// One prefetching kernel: placed after the skinny product of group `after`, asking L2
/// for the first `bytes` of each weight of `weights` (tensor, bytes), in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Beside {
    /// The group whose function the kernel is appended to (a skinny product's).
    pub after: usize,
    /// The weights asked for and how many of their first bytes, in run order.
    pub weights: Vec<(weft_graph::TensorId, usize)>,
}

/// Whether a kernel runs between the products of groups `a` and `b` (`a < b`): a window
/// in which memory would be idle.
fn window(groups: &[LoweredGroup], a: usize, b: usize) -> bool {
    groups[a + 1..b]
        .iter()
        .any(|g| !g.kernels.kernels.is_empty())
}

/// What a kernel beside the chain asks for after each skinny product that a window
/// follows, under `budget` bytes: the weights of the products after it, in run order,
/// until the budget is spent.
pub fn plan(
    g: &Graph,
    partition: &Partition,
    groups: &[LoweredGroup],
    budget: usize,
) -> Vec<Beside> {
    let products: Vec<Streamed> = products(g, partition, groups);
    let mut out = Vec::new();
    for (i, p) in products.iter().enumerate() {
        let Some(next) = products.get(i + 1) else {
            continue;
        };
        if !window(groups, p.group, next.group) {
            continue;
        }
        let mut left = budget;
        let mut weights = Vec::new();
        for later in &products[i + 1..] {
            if left < CHUNK_BYTES {
                break;
            }
            let bytes = later.bytes.min(left);
            weights.push((later.weight, bytes));
            left -= bytes;
        }
        if !weights.is_empty() {
            out.push(Beside {
                after: p.group,
                weights,
            });
        }
    }
    out
}

/// Appends to each skinny product's function that [`plan`] names a kernel asking L2
/// for its weights; returns the kernels placed. Nothing under one chunk of budget.
pub fn bring(
    g: &Graph,
    partition: &Partition,
    groups: &mut [LoweredGroup],
    limits: &TargetLimits,
    budget: usize,
) -> Vec<Beside> {
    if budget < CHUNK_BYTES {
        return Vec::new();
    }
    let besides = plan(g, partition, groups, budget);
    for b in &besides {
        let chunks: usize = b
            .weights
            .iter()
            .map(|&(_, bytes)| bytes / CHUNK_BYTES)
            .sum();
        let blocks = chunks
            .div_ceil(THREADS as usize)
            .clamp(1, limits.multiprocessors.max(1) as usize);
        let group = &mut groups[b.after];
        let mut kernel = Kernel {
            name: format!("{}_l2_beside", group.kernels.name),
            params: Vec::new(),
            grid: [blocks as u32, 1, 1],
            block: [THREADS, 1, 1],
            shared: Vec::new(),
            locals: Vec::new(),
            body: KStmt::Seq(Vec::new()),
            min_blocks_per_sm: 0,
            async_copies: false,
            async_pending: 0,
            fragments: Vec::new(),
        };
        let mut asked = Vec::new();
        for (n, &(weight, bytes)) in b.weights.iter().enumerate() {
            let t = g.tensor(weight);
            let buffer = Buffer::new(
                format!("beside_{n}"),
                vec![t.numel() as i64],
                t.dtype,
                Scope::Global,
            );
            prefetch_chunks(&mut kernel, &buffer, bytes, t.dtype.bytes());
            group.kernels.params.push(Param::Buffer(buffer));
            group.params.push(weight);
            asked.push(format!("{:.1} MB of `{}`", bytes as f64 / 1e6, t.name));
        }
        group.kernels.kernels.push(kernel);
        group.schedule.push_str(&format!(
            "; then a kernel beside the chain asks L2 for {} (WEFT_L2_BESIDE)",
            asked.join(", ")
        ));
    }
    besides
}
