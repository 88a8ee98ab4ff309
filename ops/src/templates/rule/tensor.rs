//! The cost model the stated rule ranks tensor-core tiles by (the fp16 matmul template's
//! mma.sync tiles and Hopper's wgmma tiles): an estimate, in cycles, of a launch of
//! `blocks` tiles on a GPU of `multiprocessors`, in the same form as the CUDA-core model
//! ([`super::model`]).
//!
//! - **Waves.** The busiest multiprocessor runs `⌈blocks / multiprocessors⌉` blocks, at
//!   most `resident` at once: threads, registers (accumulators, the operand fragments,
//!   [`REGISTERS_BESIDES`]) and shared memory (the stages, the staging tile) per block.
//! - **A k step** of the resident blocks lasts the longest of: the tensor cores'
//!   multiplies ([`MMA_RATE`], [`WGMMA_RATE`]); the shared-memory traffic of an mma.sync
//!   tile (an `ldmatrix` of each of the warp's `fm + fn` fragments per k16, the copy
//!   into the stage; [`SHARED_BYTES_PER_CYCLE`]); the operand tiles crossing L2
//!   ([`OPERAND_BYTES_PER_CYCLE`] per multiprocessor: larger block tiles read less per
//!   product); the warp instructions issued (`2·fm·fn` mma.sync and `fm + fn` ldmatrix
//!   per k16 and warp, and the copies, narrower where rows are not 16-byte aligned,
//!   [`COPY_ISSUE`], [`RAGGED_COPY`]); and a floor, [`STEP_LATENCY`] (the barrier) plus
//!   [`MEMORY_LATENCY`] over the tiles the pipeline keeps in flight (one for register
//!   staging, `st - 1` for Hopper's TMA ring). wgmma tiles read their operands from
//!   shared memory without ldmatrix and copy with TMA: only the multiplies, L2 and the
//!   floor bound their steps.
//! - **Outside the k loop**, per round: the pipeline's fill ([`MEMORY_LATENCY`]) and the
//!   epilogue's stores ([`EPILOGUE_PER_OUTPUT`]); per launch, [`LAUNCH`] and the unique
//!   operands and result crossing DRAM ([`DRAM_BYTES_PER_CYCLE`]).
//! - **Split-K** writes `splits · m · n` f32 partials and reads them back
//!   ([`PARTIAL_BYTES_PER_CYCLE`]) in a second launch ([`SPLIT_LAUNCH`]).
//!
//! The fitted constants come from an H100's kernel times (`weft sweep --trials`,
//! 2026-11-25, `docs/measurements/h100-2026-11-25b/f16-*-2.json`,
//! `h100-2026-11-25c/f16-1.json` and `h100-2026-11-25e/f16-2.json`: 48 sampled configs
//! of the whole space at each of the 60 `mixed` shapes, two sweeps, about 3300 times
//! with the 16-warp tiles left out), fitted for the pick (`docs/rule-f16.md`,
//! `docs/rule-f16-fit.py`): read them as fitted weights more than as the hardware's
//! figures. The hardware's own are stated as such. They describe NVIDIA's tensor cores
//! fed by 16-byte copies: the fp16 template gives the model its tiles on CUDA and HIP,
//! not on WGSL and MSL, whose tiles are stored element by element (there its picks ran
//! at 0.26–0.63× of the tuned best on Vulkan, `docs/rule-f16.md`).

use super::model::{
    Estimate, ISSUE_PER_MP, MAX_BLOCKS_PER_MP, REGISTERS_PER_MP, THREADS_PER_MP, waves,
};
use super::{Product, Tile};
use crate::templates::ceil_div;

/// Shared memory of a multiprocessor (an H100's 228 KiB) and what each block reserves of
/// it besides its own (the driver's 1 KiB).
pub const SHARED_PER_MP: i64 = 228 * 1024;
/// See [`SHARED_PER_MP`].
pub const SHARED_RESERVED_PER_BLOCK: i64 = 1024;

/// Registers a thread needs besides its accumulators and fragments: addresses, the loop,
/// staged loads (the hardware's figure is the compiler's; fixed, not fitted).
pub const REGISTERS_BESIDES: i64 = 40;

/// 16×16×16 products a multiprocessor's tensor cores finish a cycle through `mma.sync`
/// (fitted: 29% of the H100's dense fp16 peak, which this kernel's synchronous
/// multiplies never approach).
pub const MMA_RATE: f64 = 0.143;

/// 16×16×16 products a multiprocessor finishes a cycle through `wgmma`: the H100's dense
/// fp16 peak (2048 FMAs a cycle). Fixed, not fitted: the fit put wgmma tiles' limit in
/// L2 and latency, never here.
pub const WGMMA_RATE: f64 = 0.5;

/// Bytes a cycle a multiprocessor's shared memory moves (32 banks of 4 bytes).
pub const SHARED_BYTES_PER_CYCLE: f64 = 128.0;

/// Bytes a cycle per multiprocessor the operand tiles arrive at from L2 (fitted).
pub const OPERAND_BYTES_PER_CYCLE: f64 = 45.8;

/// Issue slots a warp's copy instruction costs, with its address and predicate work
/// (fitted: narrow copies of unaligned rows are what make it count).
pub const COPY_ISSUE: f64 = 14.7;

/// The copies' extra cost, as a fraction, where a part's reduction is not a whole number
/// of k steps: every load tests k (fitted; measured 1.7× slower splits at such shapes).
pub const RAGGED_COPY: f64 = 0.555;

/// Cycles a k step takes at least: the barrier and the step's own latency (fitted).
pub const STEP_LATENCY: f64 = 431.0;

/// Cycles of operand latency a k step waits, divided among the tiles the pipeline keeps
/// in flight; also the pipeline's fill once per round (fitted).
pub const MEMORY_LATENCY: f64 = 131.0;

/// Cycles per output element of a multiprocessor's resident blocks in the epilogue
/// (staging through shared memory, the f16 stores; fitted).
pub const EPILOGUE_PER_OUTPUT: f64 = 0.4535;

/// Bytes a cycle the whole GPU reads from DRAM (an H100's 3.35 TB/s at 1.755 GHz; fixed).
pub const DRAM_BYTES_PER_CYCLE: f64 = 1900.0;

/// Cycles a launch costs besides its blocks (fitted; about 2.1 µs at 1.755 GHz).
pub const LAUNCH: f64 = 3700.0;

/// Cycles the summing kernel of a split costs besides moving the partials (fitted).
pub const SPLIT_LAUNCH: f64 = 2530.0;

/// Bytes a cycle per multiprocessor the partial sums are written and read at (fitted).
pub const PARTIAL_BYTES_PER_CYCLE: f64 = 15.6;

/// What a tensor-core tile does, for the model: its warps' fragments and its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixTile {
    /// Fragments of a warp along m and n (`fm`, `fn`; for wgmma, m64 tiles and n/16).
    pub frags: [i64; 2],
    /// Sets of fragments in registers (1, or 2 pipelined).
    pub frag_buffers: i64,
    /// Hopper's wgmma from TMA-filled stages (no ldmatrix, no copy instructions).
    pub warpgroup: bool,
    /// Operand tiles in flight while a step multiplies: 1 for register staging, the
    /// stages less one for asynchronous copies and TMA.
    pub in_flight: i64,
    /// Shared bytes of a block: stages and staging.
    pub shared_bytes: i64,
    /// f32 accumulator registers a thread holds.
    pub accumulators: i64,
    /// Whether the template splits this tile's reduction (mma.sync tiles of the space's
    /// split form; every wgmma tile).
    pub splits: bool,
}

/// Halves per global load along a row of `len` halves: 8 (16 bytes) where rows keep it
/// aligned, else 4, 2 or 1, as the template loads.
fn lanes(len: i64) -> i64 {
    [8, 4, 2].into_iter().find(|l| len % l == 0).unwrap_or(1)
}

/// The model's estimate for tensor-core `tile` (doing `work`) over product `p` split in
/// `splits` parts, on `multiprocessors`.
pub fn estimate(
    tile: &Tile,
    work: MatrixTile,
    p: Product,
    splits: i64,
    multiprocessors: i64,
) -> Estimate {
    let mps = multiprocessors.max(1);
    let threads = tile.threads.max(32);
    let warps = (threads / 32) as f64;
    let (bm, bn, bk) = (tile.block_m, tile.block_n, tile.bk);
    let blocks = ceil_div(p.m, bm) * ceil_div(p.n, bn) * p.batch * splits;
    let [fm, fn_] = work.frags;
    let fragments = if work.warpgroup {
        0
    } else {
        4 * (fm + fn_) * work.frag_buffers
    };
    let registers = work.accumulators + fragments + REGISTERS_BESIDES;
    let by_registers = REGISTERS_PER_MP / (threads * registers).max(1);
    let by_shared = SHARED_PER_MP / (work.shared_bytes + SHARED_RESERVED_PER_BLOCK).max(1);
    let resident = (THREADS_PER_MP / threads)
        .min(by_registers)
        .min(by_shared)
        .clamp(1, MAX_BLOCKS_PER_MP);
    let (at_once, rounds) = waves(blocks, resident, mps);
    let rounds = rounds as f64;
    let k_part = ceil_div(p.k, splits);
    let steps = ceil_div(k_part, bk) as f64;
    let at = at_once as f64;
    let (bm_f, bn_f, bk_f) = (bm as f64, bn as f64, bk as f64);
    let rate = if work.warpgroup { WGMMA_RATE } else { MMA_RATE };
    let tensor = at * bm_f * bn_f * bk_f / 4096.0 / rate;
    let operands = at * (bm_f + bn_f) * bk_f * 2.0 / OPERAND_BYTES_PER_CYCLE;
    let mut step = tensor.max(operands);
    if !work.warpgroup {
        let (fm, fn_) = (fm as f64, fn_ as f64);
        let k16 = bk_f / 16.0;
        // ldmatrix reads 512 bytes a fragment; the copy stores the stage once.
        let shared_bytes = warps * (fm + fn_) * k16 * 512.0 + (bm_f + bn_f) * bk_f * 2.0;
        let shared = at * shared_bytes / SHARED_BYTES_PER_CYCLE;
        let (va, vb) = (lanes(p.k) as f64, lanes(p.n) as f64);
        let ragged = if k_part % bk != 0 { RAGGED_COPY } else { 0.0 };
        let copies = (bm_f * bk_f / va + bk_f * bn_f / vb) / 32.0 * COPY_ISSUE * (1.0 + ragged);
        let multiplies = warps * k16 * (2.0 * fm * fn_ + fm + fn_);
        let issue = at * (copies + multiplies) / ISSUE_PER_MP;
        step = step.max(shared).max(issue);
    }
    let floor = STEP_LATENCY + MEMORY_LATENCY / work.in_flight.max(1) as f64;
    let step = step.max(floor);
    // Resident wgmma blocks overlap one's epilogue with the others' main loops: with two
    // a multiprocessor GPT-2's c_fc (its GELU epilogue) ran 43.4 → 41.8 µs and its
    // c_proj 43.9 → 40.7 (2026-11-27, `docs/wgmma-epilogue.md`), where a serial
    // epilogue per block would have made them no faster.
    let epilogue_blocks = if work.warpgroup { 1.0 } else { at };
    let epilogue = EPILOGUE_PER_OUTPUT * epilogue_blocks * bm_f * bn_f;
    let compute = rounds * (steps * step + epilogue + MEMORY_LATENCY);
    let unique = ((p.m * p.k + p.k * p.n + p.m * p.n) * p.batch * 2) as f64;
    let mut cycles = compute.max(unique / DRAM_BYTES_PER_CYCLE) + LAUNCH;
    if splits > 1 {
        let partials = (splits * p.m * p.n * p.batch * 4 * 2) as f64;
        cycles += SPLIT_LAUNCH + partials / (PARTIAL_BYTES_PER_CYCLE * mps as f64);
    }
    Estimate {
        cycles,
        blocks,
        resident,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::templates::Config;

    fn tile(bm: i64, bn: i64, threads: i64, bk: i64) -> Tile {
        Tile {
            block_m: bm,
            block_n: bn,
            threads,
            bk,
            pref: 0,
            per_thread: None,
            matrix: None,
            config: Config(vec![]),
        }
    }

    fn sync(frags: [i64; 2]) -> MatrixTile {
        MatrixTile {
            frags,
            frag_buffers: 1,
            warpgroup: false,
            in_flight: 1,
            shared_bytes: 40 * 1024,
            accumulators: frags[0] * frags[1] * 8,
            splits: true,
        }
    }

    #[test]
    fn larger_warp_tiles_win_large_products_and_small_tiles_small_ones() {
        // 4096³: 128×128 tiles of 8 warps with 4×2 fragments each beat 64×64 tiles of 4
        // warps with 2×2 (half the operand traffic per product).
        let p = Product::whole(4096, 4096, 4096, 1);
        let big = estimate(&tile(128, 128, 256, 32), sync([4, 2]), p, 1, 132);
        let small = estimate(&tile(64, 64, 128, 32), sync([2, 2]), p, 1, 132);
        assert!(big.cycles < small.cycles, "{big:?} {small:?}");
        // 256×256×256: 16 large tiles leave most of the GPU idle.
        let p = Product::whole(256, 256, 256, 1);
        let big = estimate(&tile(128, 128, 256, 32), sync([4, 2]), p, 1, 132);
        let small = estimate(&tile(64, 64, 128, 32), sync([2, 2]), p, 1, 132);
        assert!(small.cycles < big.cycles, "{big:?} {small:?}");
    }

    #[test]
    fn long_reductions_over_few_tiles_pay_for_a_split_and_odd_rows_cost_copies() {
        let t = tile(64, 64, 128, 32);
        let p = Product::split(64, 64, 32768);
        let whole = estimate(&t, sync([2, 2]), p, 1, 132);
        let split = estimate(&t, sync([2, 2]), p, 16, 132);
        assert!(split.cycles * 4.0 < whole.cycles, "{split:?} {whole:?}");
        // Rows of 1021 halves load one half at a time.
        let even = estimate(
            &t,
            sync([2, 2]),
            Product::whole(1024, 1024, 1024, 1),
            1,
            132,
        );
        let odd = estimate(
            &t,
            sync([2, 2]),
            Product::whole(1021, 1021, 1021, 1),
            1,
            132,
        );
        assert!(odd.cycles > 1.2 * even.cycles, "{odd:?} {even:?}");
    }

    #[test]
    fn shared_memory_bounds_the_blocks_a_multiprocessor_holds() {
        let deep = MatrixTile {
            shared_bytes: 120 * 1024,
            ..sync([2, 2])
        };
        let p = Product::whole(4096, 4096, 64, 1);
        assert_eq!(
            estimate(&tile(64, 64, 128, 32), deep, p, 1, 132).resident,
            1
        );
        assert_eq!(
            estimate(&tile(64, 64, 128, 32), sync([2, 2]), p, 1, 132).resident,
            5
        );
    }
}
