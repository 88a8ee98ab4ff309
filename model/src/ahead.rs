//! Weights brought into L2 ahead of the products that stream them (CUDA).
//!
//! A decode step is a chain: each skinny product streams its weight from memory, and
//! between two of them run kernels that read almost nothing (the cache write and the
//! split-KV attention between q/k/v and o, the activation between gate/up and down).
//! While those run, and while each product starts up (its first loads a memory round
//! trip away), memory is idle. So each skinny product, once it has stored its output,
//! asks L2 for the start of the weights the next products will stream: its threads
//! issue one bulk prefetch of the copy engine a chunk (`cp.async.bulk.prefetch.L2`,
//! [`CHUNK_BYTES`] each, spread over every block of its grid), and exit, so that the
//! next product's loads find the chunks in L2.
//!
//! How much: up to a budget in bytes, taken from the following products in run order
//! (the next one's weight whole, then the start of the one after, …). L2 holds 50 MB
//! on an H100 or H200, and what a product streams evicts what was asked before it. A
//! prefetch changes no value: the product reads its weight as before, from L2 or from
//! memory.
//!
//! **Measured slower, off** (`docs/l2-ahead.md`; H200, TinyLlama-shaped decode): the
//! step grows with the bytes asked, by about 1.4 µs a product at 24 MB, the same with
//! one `prefetch.global.L2` a line (the first form) as with the bulk requests. The
//! reading that fits: a block does not retire while its requests are outstanding, so
//! the product's grid completes only when they are served, and the next kernel waits
//! for that completion — the requests run in the chain, not beside it. A request from a
//! kernel nothing waits for (a second stream) is [`crate::beside`].
//!
//! `WEFT_L2_AHEAD` (megabytes, `0` off) sets the budget
//! ([`crate::CompileOptions::l2_ahead`], default 0). Only where the kernel's dialect
//! writes a prefetch and the runtime binds one more buffer freely: CUDA
//! (`TargetLimits::grid_dependency`, sm_90 and later), whose buffers are allocations of
//! their own (aligned far past the 16 bytes a bulk request needs).

use weft_graph::partition::{GroupKind, Partition, skinny};
use weft_graph::{Graph, TensorId};
use weft_ir::expr::{BinOp, Buffer, Expr, Scope, ThreadAxis, Var};
use weft_ir::func::Param;
use weft_ir::kernel::{Access, KStmt, Kernel, KernelParam};

use crate::lower::{Horizontal, LoweredGroup};

/// Bytes one bulk prefetch asks for (a multiple of 16; the weights' buffers start
/// 16-byte aligned, so every chunk does).
pub const CHUNK_BYTES: usize = 8192;

/// A product's weight: the tensor and its bytes as stored.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Streamed {
    pub(crate) group: usize,
    pub(crate) weight: TensorId,
    pub(crate) bytes: usize,
}

/// One prefetch a product's kernel issues: the first `bytes` of `weight`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ahead {
    /// The group whose kernel issues it.
    pub group: usize,
    pub weight: TensorId,
    pub bytes: usize,
}

/// The skinny products of `groups` (one per partition group, in run order) and the
/// weight each streams: the largest constant operand of its product that its kernel
/// reads.
pub(crate) fn products(g: &Graph, partition: &Partition, groups: &[LoweredGroup]) -> Vec<Streamed> {
    let mut out = Vec::new();
    for (i, (lowered, pg)) in groups.iter().zip(&partition.groups).enumerate() {
        if pg.kind != GroupKind::Anchor
            || lowered.horizontal != Horizontal::Alone
            || !skinny::takes(g, pg.root, weft_kernels::gemv::MAX_M as usize)
        {
            continue;
        }
        // The product's own operands (not what an earlier `bring` bound to it).
        let operands = &g.nodes[pg.root.0].inputs;
        let weight = lowered
            .params
            .iter()
            .filter(|t| operands.contains(t))
            .map(|&t| (t, g.tensor(t)))
            .filter(|(_, t)| t.is_constant())
            .map(|(id, t)| (id, t.numel() * t.dtype.bytes()))
            .max_by_key(|&(_, bytes)| bytes);
        if let Some((weight, bytes)) = weight {
            out.push(Streamed {
                group: i,
                weight,
                bytes,
            });
        }
    }
    out
}

/// What each skinny product prefetches under `budget` bytes: the weights of the
/// products after it, in run order, until the budget is spent.
pub fn plan(
    g: &Graph,
    partition: &Partition,
    groups: &[LoweredGroup],
    budget: usize,
) -> Vec<Ahead> {
    let products = products(g, partition, groups);
    let mut out = Vec::new();
    for (i, p) in products.iter().enumerate() {
        let mut left = budget;
        for next in &products[i + 1..] {
            if left < CHUNK_BYTES {
                break;
            }
            let bytes = next.bytes.min(left);
            out.push(Ahead {
                group: p.group,
                weight: next.weight,
                bytes,
            });
            left -= bytes;
        }
    }
    out
}

/// Makes each skinny product's last kernel prefetch what [`plan`] gives it, after its
/// own stores; returns the prefetches placed.
pub fn bring(
    g: &Graph,
    partition: &Partition,
    groups: &mut [LoweredGroup],
    budget: usize,
) -> Vec<Ahead> {
    if budget < CHUNK_BYTES {
        return Vec::new();
    }
    let aheads = plan(g, partition, groups, budget);
    for (n, a) in aheads.iter().enumerate() {
        let t = g.tensor(a.weight);
        let buffer = Buffer::new(
            format!("ahead_{n}"),
            vec![t.numel() as i64],
            t.dtype,
            Scope::Global,
        );
        let group = &mut groups[a.group];
        let Some(kernel) = group.kernels.kernels.last_mut() else {
            continue;
        };
        prefetch_chunks(kernel, &buffer, a.bytes, t.dtype.bytes());
        group.kernels.params.push(Param::Buffer(buffer));
        group.params.push(a.weight);
        group.schedule.push_str(&format!(
            "; then asks L2 for {:.1} MB of `{}` (WEFT_L2_AHEAD)",
            a.bytes as f64 / 1e6,
            t.name
        ));
    }
    aheads
}

/// The thread's index in the whole grid, `0..blocks · threads`, blocks fastest: the
/// first `blocks` indices are thread 0 of each block, so that a few requests still
/// spread over every block (and so every multiprocessor's copy engine).
fn grid_thread(kernel: &Kernel) -> Expr {
    let add = |a: Expr, b: Expr| Expr::binary(BinOp::Add, a, b);
    let mul = |a: Expr, b: i64| Expr::binary(BinOp::Mul, a, Expr::int(b));
    let axis = |a: ThreadAxis| Expr::Builtin(a);
    let [gx, gy, _] = kernel.grid.map(i64::from);
    let [tx, ty, _] = kernel.block.map(i64::from);
    let blocks = kernel.grid.iter().map(|&g| g as i64).product::<i64>();
    let block = add(
        mul(
            add(
                mul(axis(ThreadAxis::BlockIdxZ), gy),
                axis(ThreadAxis::BlockIdxY),
            ),
            gx,
        ),
        axis(ThreadAxis::BlockIdxX),
    );
    let thread = add(
        mul(
            add(
                mul(axis(ThreadAxis::ThreadIdxZ), ty),
                axis(ThreadAxis::ThreadIdxY),
            ),
            tx,
        ),
        axis(ThreadAxis::ThreadIdxX),
    );
    add(mul(thread, blocks), block)
}

/// Appends to `kernel` a bulk prefetch of each [`CHUNK_BYTES`] of the first `bytes` of
/// `buffer` (whole chunks inside the buffer: what is left past the last is not asked
/// for), chunk `c` by grid thread `c mod threads` ([`grid_thread`]'s order), and binds
/// `buffer` as a parameter it reads.
pub(crate) fn prefetch_chunks(
    kernel: &mut Kernel,
    buffer: &Buffer,
    bytes: usize,
    elem_bytes: usize,
) {
    let threads = (kernel.grid.iter().map(|&g| g as u64).product::<u64>()
        * kernel.threads_per_block())
    .max(1) as i64;
    let elem_bytes = elem_bytes.max(1) as i64;
    let per_chunk = CHUNK_BYTES as i64 / elem_bytes;
    let stored = buffer.numel() * elem_bytes;
    let chunks = (bytes as i64).min(stored) / CHUNK_BYTES as i64;
    if chunks == 0 {
        return;
    }
    let rounds = (chunks + threads - 1) / threads;
    let id = Var::new(format!("{}_t", buffer.name()), weft_ir::dtype::DType::I32);
    let round = Var::new(format!("{}_r", buffer.name()), weft_ir::dtype::DType::I32);
    let chunk = Expr::binary(
        BinOp::Add,
        Expr::binary(BinOp::Mul, Expr::Var(round.clone()), Expr::int(threads)),
        Expr::Var(id.clone()),
    );
    let index = Expr::binary(BinOp::Mul, chunk.clone(), Expr::int(per_chunk));
    let body = KStmt::For {
        var: round,
        extent: rounds,
        unroll: false,
        body: Box::new(KStmt::If {
            cond: chunk.lt(Expr::int(chunks)),
            then: Box::new(KStmt::Prefetch {
                buffer: buffer.clone(),
                index,
                bytes: CHUNK_BYTES as u32,
            }),
            otherwise: None,
        }),
    };
    let prefetches = KStmt::Let {
        var: id,
        value: grid_thread(kernel),
        body: Box::new(body),
    };
    let own = std::mem::replace(&mut kernel.body, KStmt::Seq(Vec::new()));
    kernel.body = KStmt::seq(vec![
        own,
        KStmt::Comment(format!(
            "{chunks} chunks of {CHUNK_BYTES} bytes of `{}` asked of L2 for the products after this one",
            buffer.name()
        )),
        prefetches,
    ]);
    kernel.params.push(KernelParam::Buffer {
        buffer: buffer.clone(),
        access: Access::Read,
    });
}
