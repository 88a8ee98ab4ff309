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
//! 2026-11-25, `measurements/h100-2026-11-25b/f16-*-2.json`,
//! `h100-2026-11-25c/f16-1.json` and `h100-2026-11-25e/f16-2.json`: 48 sampled configs
//! of the whole space at each of the 60 `mixed` shapes, two sweeps, about 3300 times
//! with the 16-warp tiles left out), fitted for the pick (`docs/rule-f16.md`,
//! `scripts/rule-f16-fit.py`): read them as fitted weights more than as the hardware's
//! figures. The hardware's own are stated as such. They describe NVIDIA's tensor cores
//! fed by 16-byte copies ([`NATIVE`]: CUDA, HIP).
//!
//! WGSL and MSL store their tiles into shared memory one half at a time, load four halves
//! a thread, pass every accumulator fragment through a workgroup barrier in the epilogue
//! and have no wgmma: their tiles take the same model with [`ELEMENTWISE`]'s constants,
//! fitted on an H100's kernel times through Vulkan (`weft sweep --trials`, 2026-11-27,
//! `measurements/h100-2026-11-27b/vk*.json`: the whole space at 24 shapes, about
//! 2500 times; `scripts/rule-f16-vulkan-fit.py`). The CUDA constants' picks ran at
//! 0.26–0.63× of the tuned best there, the block-count rule's at 0.41–0.88×.

use super::model::{
    Estimate, ISSUE_PER_MP, MAX_BLOCKS_PER_MP, REGISTERS_PER_MP, THREADS_PER_MP, waves,
};
use super::{Product, Tile};
use crate::ceil_div;

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

/// The fitted constants of one way of feeding the matrix units: [`NATIVE`] (16-byte
/// copies, CUDA and HIP) or [`ELEMENTWISE`] (WGSL, MSL). Each field is in the units of
/// the constant of the same name above.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fitted {
    /// [`MMA_RATE`].
    pub mma_rate: f64,
    /// [`OPERAND_BYTES_PER_CYCLE`].
    pub operand_bytes_per_cycle: f64,
    /// [`COPY_ISSUE`]: a warp's global load.
    pub copy_issue: f64,
    /// Issue slots a warp's store of one half into the stage costs (0 where the copy
    /// stores what it loaded in one instruction, counted in `copy_issue`).
    pub store_issue: f64,
    /// [`RAGGED_COPY`].
    pub ragged_copy: f64,
    /// [`STEP_LATENCY`].
    pub step_latency: f64,
    /// [`MEMORY_LATENCY`].
    pub memory_latency: f64,
    /// [`EPILOGUE_PER_OUTPUT`].
    pub epilogue_per_output: f64,
    /// Cycles a block's epilogue spends per accumulator fragment of a warp, besides its
    /// outputs (WGSL's staging passes each through two workgroup barriers).
    pub epilogue_per_fragment: f64,
    /// [`LAUNCH`].
    pub launch: f64,
    /// [`SPLIT_LAUNCH`].
    pub split_launch: f64,
    /// [`PARTIAL_BYTES_PER_CYCLE`].
    pub partial_bytes_per_cycle: f64,
    /// The widest global load, in halves: 8 (16 bytes) on CUDA, 4 where the target
    /// copies element by element.
    pub max_lanes: i64,
}

/// The constants fitted on CUDA's kernel times (the constants above).
pub const NATIVE: Fitted = Fitted {
    mma_rate: MMA_RATE,
    operand_bytes_per_cycle: OPERAND_BYTES_PER_CYCLE,
    copy_issue: COPY_ISSUE,
    store_issue: 0.0,
    ragged_copy: RAGGED_COPY,
    step_latency: STEP_LATENCY,
    memory_latency: MEMORY_LATENCY,
    epilogue_per_output: EPILOGUE_PER_OUTPUT,
    epilogue_per_fragment: 0.0,
    launch: LAUNCH,
    split_launch: SPLIT_LAUNCH,
    partial_bytes_per_cycle: PARTIAL_BYTES_PER_CYCLE,
    max_lanes: 8,
};

/// The constants fitted on Vulkan's kernel times on an H100 (see the module's text),
/// for tiles stored element by element. What the fit found:
/// - the operand tiles arrive at a fourth of CUDA's rate (11 bytes a cycle per
///   multiprocessor), so larger block tiles pay more than on CUDA;
/// - a k step lasts at least about 800 cycles (the barrier, the loads' latency with one
///   tile in flight);
/// - each fragment of a warp costs its block about 1500 cycles in the epilogue;
/// - a launch costs nothing measurable besides its blocks (one compute pass);
/// - the matrix units' rate (0.127 products a cycle, 214 TFLOP/s over 128
///   multiprocessors) bounds only the largest products.
///
/// MSL takes them too, unmeasured: no Apple GPU is at hand.
pub const ELEMENTWISE: Fitted = Fitted {
    mma_rate: 0.1274,
    operand_bytes_per_cycle: 11.06,
    copy_issue: 48.97,
    store_issue: 5.258,
    ragged_copy: 0.0765,
    step_latency: 796.9,
    memory_latency: 0.0,
    epilogue_per_output: 0.0,
    epilogue_per_fragment: 1520.1,
    launch: 0.0,
    split_launch: 3120.8,
    partial_bytes_per_cycle: 8.322,
    max_lanes: 4,
};

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
    /// Whether the tile is stored into shared memory element by element (WGSL, MSL): the
    /// model then takes [`ELEMENTWISE`]'s constants, else [`NATIVE`]'s.
    pub elementwise: bool,
}

impl MatrixTile {
    /// The constants the model takes for this tile.
    pub fn fitted(&self) -> &'static Fitted {
        if self.elementwise {
            &ELEMENTWISE
        } else {
            &NATIVE
        }
    }
}

/// Halves per global load along a row of `len` halves: `widest` (8: 16 bytes) where rows
/// keep it aligned, else 4, 2 or 1, as the template loads.
fn lanes(len: i64, widest: i64) -> i64 {
    [8, 4, 2]
        .into_iter()
        .filter(|&l| l <= widest)
        .find(|l| len % l == 0)
        .unwrap_or(1)
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
    let fit = work.fitted();
    let rate = if work.warpgroup {
        WGMMA_RATE
    } else {
        fit.mma_rate
    };
    let tensor = at * bm_f * bn_f * bk_f / 4096.0 / rate;
    let operands = at * (bm_f + bn_f) * bk_f * 2.0 / fit.operand_bytes_per_cycle;
    let mut step = tensor.max(operands);
    if !work.warpgroup {
        let (fm, fn_) = (fm as f64, fn_ as f64);
        let k16 = bk_f / 16.0;
        // ldmatrix reads 512 bytes a fragment; the copy stores the stage once.
        let shared_bytes = warps * (fm + fn_) * k16 * 512.0 + (bm_f + bn_f) * bk_f * 2.0;
        let shared = at * shared_bytes / SHARED_BYTES_PER_CYCLE;
        let (va, vb) = (
            lanes(p.k, fit.max_lanes) as f64,
            lanes(p.n, fit.max_lanes) as f64,
        );
        let ragged = if k_part % bk != 0 {
            fit.ragged_copy
        } else {
            0.0
        };
        let loads = (bm_f * bk_f / va + bk_f * bn_f / vb) * fit.copy_issue;
        let stores = (bm_f + bn_f) * bk_f * fit.store_issue;
        let copies = (loads + stores) / 32.0 * (1.0 + ragged);
        let multiplies = warps * k16 * (2.0 * fm * fn_ + fm + fn_);
        let issue = at * (copies + multiplies) / ISSUE_PER_MP;
        step = step.max(shared).max(issue);
    }
    let floor = fit.step_latency + fit.memory_latency / work.in_flight.max(1) as f64;
    let step = step.max(floor);
    // Resident wgmma blocks overlap one's epilogue with the others' main loops: with two
    // a multiprocessor GPT-2's c_fc (its GELU epilogue) ran 43.4 → 41.8 µs and its
    // c_proj 43.9 → 40.7 (2026-11-27, `docs/wgmma-epilogue.md`), where a serial
    // epilogue per block would have made them no faster.
    let epilogue_blocks = if work.warpgroup { 1.0 } else { at };
    let epilogue = fit.epilogue_per_output * epilogue_blocks * bm_f * bn_f
        + fit.epilogue_per_fragment * (fm * fn_) as f64;
    let compute = rounds * (steps * step + epilogue + fit.memory_latency);
    let unique = ((p.m * p.k + p.k * p.n + p.m * p.n) * p.batch * 2) as f64;
    let mut cycles = compute.max(unique / DRAM_BYTES_PER_CYCLE) + fit.launch;
    if splits > 1 {
        let partials = (splits * p.m * p.n * p.batch * 4 * 2) as f64;
        cycles += fit.split_launch + partials / (fit.partial_bytes_per_cycle * mps as f64);
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
    use crate::Config;

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
            elementwise: false,
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
