//! Split-K whose last part sums: the one-kernel form of [`crate::split_k`] for targets
//! whose blocks can hand each other results ([`TargetLimits::device_fence`]: CUDA, HIP,
//! the interpreter).
//!
//! Each of a tile's `sk` parts (grid layers) writes its partial tile to the f32
//! workspace as before, fences (`__threadfence()`), and one thread adds one to the
//! tile's counter atomically; the block that sees `sk − 1` — the last to arrive, whoever
//! that is — fences again, reads the `sk` partials of its tile **in order 0..sk** (so the
//! sum's rounding does not depend on arrival), stores the sum where the summing kernel
//! did (the epilogue, fused into that store, follows), and zeroes the counter.
//!
//! The counters are a temporary the runtime zeroes once when it allocates it
//! ([`weft_ir::kernel::LoweredFunc::counters`]) and never poisons; every launch that
//! completes leaves each of them at zero again, so a replayed CUDA graph finds them
//! zeroed. A launch that does not complete is a device fault, after which CUDA's context
//! (and every buffer in it) is gone: counters are allocated, zeroed, anew with it.
//!
//! [`TargetLimits::device_fence`]: weft_codegen_common::TargetLimits::device_fence

use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template};

/// What the last part of a split product sums into: `sum` (`[m, n]` f32, the te compute
/// the epilogue reads, made a stored buffer) over `splits` parts.
#[derive(Clone, Copy)]
pub struct LastPart<'a> {
    pub sum: &'a Buffer,
    pub splits: i64,
}

/// A block's tile of the product: its origin, extent and number among the tiles, and
/// the block's threads (along x).
pub(crate) struct Tile<'e> {
    pub m0: &'e Expr,
    pub n0: &'e Expr,
    pub bm: i64,
    pub bn: i64,
    pub index: &'e Expr,
    pub tx: &'e Expr,
    pub threads: i64,
}

/// The tiles' counters: a temporary of `tiles` i32.
pub(crate) fn counters(t: &mut Template, tiles: i64) -> Buffer {
    t.temp("tile_arrivals", &[tiles], DType::I32)
}

/// Appends the arrival and, in the last part, the in-order sum of `partial`
/// (`[splits, m, n]`) over the tile into `last.sum`, and the counter's reset. Every
/// thread of the block runs it (it has barriers).
pub(crate) fn append(
    kb: &mut KernelBuilder,
    last: LastPart,
    partial: &Buffer,
    counter: &Buffer,
    tile: &Tile,
) {
    let (m, n) = (partial.shape()[1], partial.shape()[2]);
    arrive(kb, counter, tile.index, tile.tx, last.splits, |kb| {
        let area = tile.bm * tile.bn;
        let passes = (area + tile.threads - 1) / tile.threads;
        // The sums of `chunk` passes are loaded into registers before any is stored: a
        // store between two passes' loads (which may alias `partial` as far as the
        // compiler knows) would wait each pass's loads out — one L2 round trip a pass,
        // ~4.5 µs on the H200 for a 32×64 tile at 128 threads (measured: a split
        // convolution took 20.5 µs against 16.1 for it and its summing kernel).
        let chunk = passes.min(SUM_CHUNK);
        let rounds = (passes + chunk - 1) / chunk;
        let sums = kb.local("last_sums", &[chunk], DType::F32);
        let place = |kb: &mut KernelBuilder, r: &Expr, c: &Expr| {
            let at = kb.let_(
                "at",
                (r.clone() * chunk + c.clone()) * tile.threads + tile.tx.clone(),
            );
            let i = kb.let_("i", tile.m0.clone() + at.clone() / tile.bn);
            let j = kb.let_("j", tile.n0.clone() + at.clone() % tile.bn);
            let inside = Expr::all([at.lt(area), i.clone().lt(m), j.clone().lt(n)]);
            (i, j, inside)
        };
        kb.serial("r", rounds, |kb, r| {
            kb.unroll("c", chunk, |kb, c| {
                let (i, j, inside) = place(kb, &r, &c);
                kb.if_(inside, |kb| {
                    let part = |z: i64| partial.load(vec![Expr::int(z), i.clone(), j.clone()]);
                    let sum = (1..last.splits).fold(part(0), |acc, z| acc + part(z));
                    kb.store(&sums, [c.clone()], sum);
                });
            });
            kb.unroll("c", chunk, |kb, c| {
                let (i, j, inside) = place(kb, &r, &c);
                kb.if_(inside, |kb| {
                    kb.store(last.sum, [i, j], sums.load(vec![c.clone()]));
                });
            });
        });
    });
}

/// Passes of the last part's sum whose loads are issued before their stores (registers
/// a thread: this many f32).
const SUM_CHUNK: i64 = 8;

/// The arrival of a block at its tile's `counter[index]` (`tx` the thread's index):
/// the block's stores fenced by its thread 0 after a barrier, one atomic increment and a
/// second fence, and — in the block that sees `splits − 1`, the last of the tile's parts
/// to arrive — `sum` (which reads the parts' stores) and the counter's reset to zero. Every thread of the block
/// runs it (it has barriers).
pub(crate) fn arrive(
    kb: &mut KernelBuilder,
    counter: &Buffer,
    index: &Expr,
    tx: &Expr,
    splits: i64,
    sum: impl FnOnce(&mut KernelBuilder),
) {
    let arrived = kb.shared("arrived", &[1], DType::I32);
    // The barrier orders every thread's partial stores before thread 0's fence, which
    // (cumulative, device scope) publishes them all before the block counts itself in:
    // one fence a block, not one a thread (the pattern of CUTLASS's semaphore). With a
    // fence in every thread the one-kernel split ran ~1.8 µs a convolution slower than
    // split + summing kernel on the H200; the fences are the suspect this tries.
    kb.barrier();
    let first = tx.clone().eq_(0);
    kb.if_(first.clone(), |kb| {
        kb.fence();
        kb.atomic_add(
            counter,
            [index.clone()],
            Expr::int(1),
            Some((&arrived, vec![Expr::int(0)])),
        );
        // The other parts' stores, published before their arrivals, are seen after
        // this fence, and through the barrier below by every thread of the block.
        kb.fence();
    });
    kb.barrier();
    let is_last = arrived.load(vec![Expr::int(0)]).eq_(splits - 1);
    kb.if_(is_last, |kb| {
        sum(kb);
        kb.if_(first, |kb| kb.store(counter, [index.clone()], Expr::int(0)));
    });
}
