//! The cost model the stated rule ranks CUDA-core tiles by: an estimate, in cycles, of
//! how long a launch of `blocks` tiles takes on a GPU of `multiprocessors`, each
//! multiprocessor holding as many blocks at once as its threads and registers allow.
//!
//! The shape of the model is the hardware's:
//!
//! - **Waves.** The busiest multiprocessor runs `⌈blocks / multiprocessors⌉` blocks, at
//!   most `resident` of them at once (threads, registers per block); the launch lasts as
//!   long as it does.
//! - **Issue.** A k step of a block issues, per warp, one FMA per accumulator per k, a
//!   shared-memory read per operand element, and a few instructions of staging and loop
//!   ([`LOADS_PER_OPERAND`], [`STEP_INSTRUCTIONS`]). A multiprocessor issues at most four
//!   warp instructions a cycle, and a warp alone less than one ([`ISSUE_PER_WARP`]; less
//!   still with few accumulators to interleave, [`FULL_ISSUE_ACCUMULATORS`]): few resident
//!   warps leave the schedulers idle. A k step takes at least [`STEP_LATENCY`] (a barrier
//!   and a shared-memory round trip).
//! - **Memory.** The operand tiles every block reads cross L2 at [`GLOBAL_BYTES_PER_CYCLE`]
//!   per multiprocessor; a launch is never faster than that.
//! - **Split-K.** A split writes its partial sums (which stay in L2,
//!   [`L2_BYTES_PER_CYCLE`]) and launches a second kernel ([`SPLIT_LAUNCH`]).
//!
//! The constants were fitted on an H100 (`weft sweep --trials`, 2026-11-25,
//! `docs/measurements/h100-2026-11-25b` and `-25c`): every rule tile (k step 16, 4×8
//! lanes) with every split that can pay, at the 60 `mixed` shapes, about 5100 kernel
//! times. They are fitted for the pick, not for the time: with them the model's pick
//! runs within 0.8× of the fastest measured config at 55 of the 60 shapes (geometric
//! mean 0.92×, worst 0.63× at 256³, where a dozen tiles tie); the same form fitted on half the shapes picked within 0.8× at 24 and 29
//! of the other half's 30. Constant launch and memory costs absorb what the model leaves
//! out (the pipeline's fill, L1 hits), so read them as fitted weights more than as the
//! hardware's figures. The rule uses them on every target: they describe a GPU of
//! CUDA cores, not one device.

use super::{Product, Tile};
use crate::templates::ceil_div;

/// Threads a multiprocessor holds at once (every NVIDIA GPU since Volta but the sm_86/89
/// parts, which hold 1536; an AMD CU's four SIMDs hold 2560 in wave64).
pub const THREADS_PER_MP: i64 = 2048;

/// 32-bit registers of a multiprocessor (NVIDIA's 64K; an AMD CU has 4 × 512 × 64 lanes).
pub const REGISTERS_PER_MP: i64 = 65536;

/// Blocks a multiprocessor holds at once at most, whatever their size (the hardware's
/// limit is 16 to 32; past 16 the model's blocks are too small to matter).
pub const MAX_BLOCKS_PER_MP: i64 = 16;

/// Warp instructions a multiprocessor issues a cycle: four schedulers.
pub const ISSUE_PER_MP: f64 = 4.0;

/// Warp instructions one warp issues a cycle on its own, at best: it stalls on shared
/// memory and barriers now and then.
pub const ISSUE_PER_WARP: f64 = 0.976;

/// Accumulators a thread needs to issue FMAs back to back (independent FMAs in flight
/// cover the pipeline's latency); fewer issue proportionally less.
pub const FULL_ISSUE_ACCUMULATORS: f64 = 13.4;

/// Registers a thread needs besides its accumulators and operand fragments: addresses,
/// loop state, the staged global loads.
pub const REGISTERS_BESIDES: i64 = 50;

/// Instructions per operand element a thread reads from shared memory per k.
pub const LOADS_PER_OPERAND: f64 = 0.751;

/// Instructions per thread per k besides FMAs and operand reads: storing the next stage,
/// the barrier, the loop.
pub const STEP_INSTRUCTIONS: f64 = 11.4;

/// Cycles a k step takes at least: a barrier and a shared-memory round trip.
pub const STEP_LATENCY: f64 = 419.0;

/// Cycles per accumulator a block spends outside its k loop: the prologue's first
/// stage and the epilogue's stores.
pub const EPILOGUE_PER_ACCUMULATOR: f64 = 132.0;

/// Bytes a cycle per multiprocessor the operand tiles are read at (L2 and DRAM together).
pub const GLOBAL_BYTES_PER_CYCLE: f64 = 33.8;

/// Bytes a cycle per multiprocessor the split's partial sums are written and read at:
/// they stay in L2.
pub const L2_BYTES_PER_CYCLE: f64 = 102.0;

/// Cycles a launch costs besides its blocks.
pub const LAUNCH: f64 = 11600.0;

/// Cycles the summing kernel of a split costs besides moving the partials.
pub const SPLIT_LAUNCH: f64 = 1180.0;

/// Outputs one thread of a CUDA-core tile accumulates: `rows × cols`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadTile {
    pub rows: i64,
    pub cols: i64,
}

impl ThreadTile {
    fn accumulators(&self) -> i64 {
        self.rows * self.cols
    }

    /// Registers a thread needs: accumulators, two operand fragments, the rest.
    fn registers(&self) -> i64 {
        self.accumulators() + 2 * (self.rows + self.cols) + REGISTERS_BESIDES
    }
}

/// What the model estimates of one launch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Cycles, launch to end.
    pub cycles: f64,
    /// Blocks of the launch (tiles × parts × batch).
    pub blocks: i64,
    /// Blocks one multiprocessor holds at once.
    pub resident: i64,
}

/// How `blocks` run on `multiprocessors` that hold `resident` each at once: the blocks
/// the busiest one runs together, and the rounds it takes (the waves of both models).
pub(super) fn waves(blocks: i64, resident: i64, multiprocessors: i64) -> (i64, i64) {
    let busiest = ceil_div(blocks, multiprocessors);
    let at_once = resident.min(busiest).max(1);
    (at_once, ceil_div(busiest, at_once))
}

/// The model's estimate for `tile` (whose threads accumulate `per_thread` outputs each)
/// over product `p` split in `splits` parts, on `multiprocessors`.
pub fn estimate(
    tile: &Tile,
    per_thread: ThreadTile,
    p: Product,
    splits: i64,
    multiprocessors: i64,
) -> Estimate {
    let mps = multiprocessors.max(1);
    let threads = tile.threads.max(32);
    let blocks = ceil_div(p.m, tile.block_m) * ceil_div(p.n, tile.block_n) * p.batch * splits;
    let by_registers = REGISTERS_PER_MP / (threads * per_thread.registers()).max(1);
    let resident = (THREADS_PER_MP / threads)
        .min(by_registers)
        .clamp(1, MAX_BLOCKS_PER_MP);
    let (at_once, rounds) = waves(blocks, resident, mps);
    let k_part = ceil_div(p.k, splits);
    let steps = ceil_div(k_part, tile.bk) as f64;
    let warps = (at_once * threads / 32) as f64;
    let acc = per_thread.accumulators() as f64;
    let per_warp = (acc / FULL_ISSUE_ACCUMULATORS).min(1.0) * ISSUE_PER_WARP;
    let issue = (warps * per_warp).min(ISSUE_PER_MP);
    let operands = (per_thread.rows + per_thread.cols) as f64;
    let step_instructions =
        tile.bk as f64 * (acc + operands * LOADS_PER_OPERAND + STEP_INSTRUCTIONS) * warps;
    let step = (step_instructions / issue).max(STEP_LATENCY);
    let compute = rounds as f64 * (steps * step + EPILOGUE_PER_ACCUMULATOR * acc);
    let operand_bytes = (blocks * (tile.block_m + tile.block_n) * k_part * 4) as f64;
    let memory = operand_bytes / (GLOBAL_BYTES_PER_CYCLE * mps as f64);
    let mut cycles = compute.max(memory) + LAUNCH;
    if splits > 1 {
        let partials = (splits * p.m * p.n * p.batch * 4 * 2) as f64;
        cycles += SPLIT_LAUNCH + partials / (L2_BYTES_PER_CYCLE * mps as f64);
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

    fn tile(bm: i64, bn: i64, threads: i64) -> Tile {
        Tile {
            block_m: bm,
            block_n: bn,
            threads,
            bk: 16,
            pref: 0,
            per_thread: None,
            matrix: None,
            config: Config(vec![]),
        }
    }

    const EIGHT: ThreadTile = ThreadTile { rows: 8, cols: 8 };

    #[test]
    fn more_blocks_than_a_wave_take_longer_and_splits_fill_idle_multiprocessors() {
        let t = tile(64, 128, 128);
        let one = estimate(&t, EIGHT, Product::whole(1024, 1024, 1024, 1), 1, 132);
        let two = estimate(&t, EIGHT, Product::whole(2048, 1024, 1024, 1), 1, 132);
        assert_eq!((one.blocks, two.blocks), (128, 256));
        assert!(two.cycles > one.cycles);
        // 8 tiles over 132 multiprocessors with a 16384-long sum: splitting it in 16
        // parts gives 128 blocks, far faster than 8 blocks walking it whole.
        let p = Product::split(128, 256, 16384);
        let whole = estimate(&t, EIGHT, p, 1, 132);
        let split = estimate(&t, EIGHT, p, 16, 132);
        assert!(split.cycles * 4.0 < whole.cycles, "{split:?} {whole:?}");
    }

    #[test]
    fn registers_bound_the_blocks_a_multiprocessor_holds() {
        // 128 accumulators in 256 threads: 224 registers each, one block per 64K.
        let big = ThreadTile { rows: 16, cols: 8 };
        let e = estimate(
            &tile(256, 128, 256),
            big,
            Product::whole(4096, 4096, 64, 1),
            1,
            132,
        );
        assert_eq!(e.resident, 1);
        // 16 accumulators in 64 threads: 80 registers each; threads alone would allow 32.
        let small = ThreadTile { rows: 4, cols: 4 };
        let e = estimate(
            &tile(16, 64, 64),
            small,
            Product::whole(4096, 4096, 64, 1),
            1,
            132,
        );
        assert_eq!(e.resident, 65536 / (64 * 80));
        // A tiny tile of few threads hits the cap on blocks.
        let tiny = ThreadTile { rows: 1, cols: 1 };
        let e = estimate(
            &tile(4, 8, 32),
            tiny,
            Product::whole(4096, 4096, 64, 1),
            1,
            132,
        );
        assert_eq!(e.resident, MAX_BLOCKS_PER_MP);
    }
}
