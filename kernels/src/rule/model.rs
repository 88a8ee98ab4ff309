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
//! - **Shared memory.** The operand fragments every resident thread reads a k step, and
//!   the stage every resident block stores, pass through the multiprocessor's one
//!   shared-memory pipe ([`SHARED_BYTES_PER_CYCLE`]): a second resident block shares it
//!   rather than adds to it.
//! - **Memory.** The operand tiles every block reads cross L2 at [`GLOBAL_BYTES_PER_CYCLE`]
//!   per multiprocessor; a launch is never faster than that.
//! - **Split-K.** A split writes its partial sums (which stay in L2,
//!   [`L2_BYTES_PER_CYCLE`]) and launches a second kernel ([`SPLIT_LAUNCH`]).
//!
//! The constants were fitted on an H100, for the pick, not for the time: the kernel times
//! of every rule tile (k step 16, 4×8 lanes; the 128×128 tile with steps of 8) with
//! every split that can pay, at the 60 `mixed` shapes
//! (`ops/tests/data/h100-matmul-rule-tiles.csv`), by `ops/tests/fit_fp32_rule.rs` (a
//! seeded random search within 4× of a start, then pulled back toward it as far as the
//! picks hold). The data are of three generations: 29 shapes timed with programmatic
//! dependent launch on the kernels with untested loads
//! (`measurements/h100-2026-11-27g`), 20 timed on those kernels without it
//! (`h100-2026-11-27e`) and 11 on the kernels that tested every load (`h100-2026-11-25b`,
//! `-25c`). Refitted on 2026-11-27 (27g) with the
//! shared-memory term added: the rule's pick runs within 0.8× of the fastest measured
//! config at all 60 shapes (geometric mean 0.955×, worst 0.81× at 128×768×768), against
//! 58 (0.936×, worst 0.77×) with the constants of before on the same data. What the term
//! fixed: without it a second resident block of four warps cost nothing (four warps
//! issue less than the multiprocessor's four instructions a cycle), so the model split
//! the 32×64 tile of four warps in 2 at 196×1024×256 and 3136×64×256 to halve its 16 k
//! steps; on the GPU the two blocks a multiprocessor then holds take as long as one block
//! of twice the steps, and the summing kernel makes the split 2 µs slower (0.77× of the
//! tile whole, the fastest there). The form without the term, refitted on the same data,
//! kept those two misses (58 of 60, 0.957×) from the constants of before, and reached 59
//! from a start near a warp's full issue rate (a pick never timed at 8×4096×4096). Fitted
//! on every other shape from the constants of before, the form with the term picked
//! within 0.8× at 29 and 29 of the other half's 30, the form without it 27 and 28.
//! Constant launch and memory costs absorb what the model leaves out (the pipeline's
//! fill, L1 hits), so read them as fitted weights more than as the hardware's figures
//! (`LOADS_PER_OPERAND` fits under the 0.25 a 128-bit read allows, now that the
//! shared-memory term prices those reads). The rule uses them wherever the compiler
//! takes a register cap (CUDA, HIP): they describe a GPU of CUDA cores, not one device.
//! WGSL and MSL keep the constants of before, [`H100_27E`], with which the picks through
//! Vulkan were timed.

use weft_codegen_common::TargetLimits;

use super::{Product, Tile};
use crate::ceil_div;

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
pub const ISSUE_PER_WARP: f64 = 0.508;

/// Accumulators a thread needs to issue FMAs back to back (independent FMAs in flight
/// cover the pipeline's latency); fewer issue proportionally less.
pub const FULL_ISSUE_ACCUMULATORS: f64 = 15.1;

/// Registers a thread needs besides its accumulators and operand fragments: addresses,
/// loop state, the staged global loads.
pub const REGISTERS_BESIDES: i64 = 57;

/// Instructions per operand element a thread reads from shared memory per k (a 128-bit
/// read serves four: 0.25 at least; 0.751 in the fit of the tested kernels, 0.3 in that
/// of 2026-11-27e, under the bound since [`SHARED_BYTES_PER_CYCLE`] prices the reads).
pub const LOADS_PER_OPERAND: f64 = 0.0987;

/// Instructions per thread per k besides FMAs and operand reads: storing the next stage,
/// the barrier, the loop (11.4 in the fit of the kernels that tested every load, 5.96 in
/// that of 2026-11-27e).
pub const STEP_INSTRUCTIONS: f64 = 3.48;

/// Cycles a k step takes at least: a barrier and a shared-memory round trip.
pub const STEP_LATENCY: f64 = 419.0;

/// Bytes a cycle a multiprocessor's shared memory serves, to every block resident on it
/// together: the operand fragments every thread reads a k step and the stage every
/// block stores. The instruction count ([`LOADS_PER_OPERAND`]) prices a read per warp;
/// this prices the multiprocessor's one shared-memory pipe, which a second resident
/// block shares rather than adds to. The hardware's figure is 128 (32 banks of 4 bytes;
/// a warp's 128-bit read takes four such cycles). The H100's times put the 32×64 tile of
/// four warps (16 accumulators a thread) near it alone: at 197×768×3072, 0.34 µs a k
/// step of 71,680 bytes (105–120 bytes a cycle at 1.75–1.98 GHz), and no faster with two
/// blocks resident (0.39 µs a block's step). The fit took 115.
pub const SHARED_BYTES_PER_CYCLE: f64 = 115.0;

/// Cycles per accumulator a block spends outside its k loop: the prologue's first
/// stage and the epilogue's stores.
pub const EPILOGUE_PER_ACCUMULATOR: f64 = 256.0;

/// Bytes a cycle per multiprocessor the operand tiles are read at (L2 and DRAM together).
pub const GLOBAL_BYTES_PER_CYCLE: f64 = 19.6;

/// Bytes a cycle per multiprocessor the split's partial sums are written and read at:
/// they stay in L2.
pub const L2_BYTES_PER_CYCLE: f64 = 322.0;

/// Cycles a launch costs besides its blocks.
pub const LAUNCH: f64 = 11600.0;

/// Cycles the summing kernel of a split costs besides moving the partials.
pub const SPLIT_LAUNCH: f64 = 1610.0;

/// Outputs one thread of a CUDA-core tile accumulates: `rows × cols`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadTile {
    pub rows: i64,
    pub cols: i64,
    /// Blocks a multiprocessor holds because the compiler was told to leave registers
    /// for them (`__launch_bounds__`' second argument; 0: the compiler's own choice, the
    /// model counts registers instead).
    pub min_blocks: i64,
}

impl ThreadTile {
    fn accumulators(&self) -> i64 {
        self.rows * self.cols
    }

    /// Registers a thread needs: accumulators, two operand fragments, the rest
    /// (`besides`, [`REGISTERS_BESIDES`]).
    fn registers(&self, besides: i64) -> i64 {
        self.accumulators() + 2 * (self.rows + self.cols) + besides
    }
}

/// The model's fitted constants, each in the units of the constant of the same name
/// above: what a fit varies ([`estimate_with`]); the rule takes [`H100`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constants {
    /// [`ISSUE_PER_WARP`].
    pub issue_per_warp: f64,
    /// [`FULL_ISSUE_ACCUMULATORS`].
    pub full_issue_accumulators: f64,
    /// [`REGISTERS_BESIDES`].
    pub registers_besides: i64,
    /// [`LOADS_PER_OPERAND`].
    pub loads_per_operand: f64,
    /// [`STEP_INSTRUCTIONS`].
    pub step_instructions: f64,
    /// [`STEP_LATENCY`].
    pub step_latency: f64,
    /// [`SHARED_BYTES_PER_CYCLE`].
    pub shared_bytes_per_cycle: f64,
    /// [`EPILOGUE_PER_ACCUMULATOR`].
    pub epilogue_per_accumulator: f64,
    /// [`GLOBAL_BYTES_PER_CYCLE`].
    pub global_bytes_per_cycle: f64,
    /// [`L2_BYTES_PER_CYCLE`].
    pub l2_bytes_per_cycle: f64,
    /// [`LAUNCH`].
    pub launch: f64,
    /// [`SPLIT_LAUNCH`].
    pub split_launch: f64,
}

/// The constants fitted on an H100 (the constants above; the module's text says on what).
pub const H100: Constants = Constants {
    issue_per_warp: ISSUE_PER_WARP,
    full_issue_accumulators: FULL_ISSUE_ACCUMULATORS,
    registers_besides: REGISTERS_BESIDES,
    loads_per_operand: LOADS_PER_OPERAND,
    step_instructions: STEP_INSTRUCTIONS,
    step_latency: STEP_LATENCY,
    shared_bytes_per_cycle: SHARED_BYTES_PER_CYCLE,
    epilogue_per_accumulator: EPILOGUE_PER_ACCUMULATOR,
    global_bytes_per_cycle: GLOBAL_BYTES_PER_CYCLE,
    l2_bytes_per_cycle: L2_BYTES_PER_CYCLE,
    launch: LAUNCH,
    split_launch: SPLIT_LAUNCH,
};

/// The constants of 2026-11-27e, fitted on the same H100 before the shared-memory term
/// (which they leave out: an unbounded rate). The rule keeps them where the target's
/// compiler takes no register cap (WGSL, MSL; [`for_target`]): its picks through Vulkan
/// on an H100 were timed with them (`ops/tests/rule_fp32_vulkan.rs`), the term was fitted
/// on CUDA's times alone, and with [`H100`] four of the five shapes timed through Vulkan
/// would take a 128×128 tile of eight warps where the 64×256 tile ran, a tile never timed
/// there.
pub const H100_27E: Constants = Constants {
    issue_per_warp: 0.495,
    full_issue_accumulators: 26.6,
    registers_besides: 50,
    loads_per_operand: 0.3,
    step_instructions: 5.96,
    step_latency: 419.0,
    shared_bytes_per_cycle: f64::INFINITY,
    epilogue_per_accumulator: 70.5,
    global_bytes_per_cycle: 19.6,
    l2_bytes_per_cycle: 322.0,
    launch: 11600.0,
    split_launch: 1180.0,
};

/// The constants the rule ranks tiles by on `limits`: [`H100`] where the compiler takes
/// a register cap (CUDA, HIP), [`H100_27E`] elsewhere (the same line the fp32 template's
/// staging limit draws, `matmul::MAX_STAGED_UNCAPPED`).
pub fn for_target(limits: &TargetLimits) -> &'static Constants {
    if limits.register_cap {
        &H100
    } else {
        &H100_27E
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
/// over product `p` split in `splits` parts, on `multiprocessors`, with the [`H100`]
/// constants.
pub fn estimate(
    tile: &Tile,
    per_thread: ThreadTile,
    p: Product,
    splits: i64,
    multiprocessors: i64,
) -> Estimate {
    estimate_with(&H100, tile, per_thread, p, splits, multiprocessors)
}

/// [`estimate`] with constants `c` (a fit's candidates).
pub fn estimate_with(
    c: &Constants,
    tile: &Tile,
    per_thread: ThreadTile,
    p: Product,
    splits: i64,
    multiprocessors: i64,
) -> Estimate {
    let mps = multiprocessors.max(1);
    let threads = tile.threads.max(32);
    let blocks = ceil_div(p.m, tile.block_m) * ceil_div(p.n, tile.block_n) * p.batch * splits;
    let by_registers = if per_thread.min_blocks > 0 {
        per_thread.min_blocks
    } else {
        REGISTERS_PER_MP / (threads * per_thread.registers(c.registers_besides)).max(1)
    };
    let resident = (THREADS_PER_MP / threads)
        .min(by_registers)
        .clamp(1, MAX_BLOCKS_PER_MP);
    let (at_once, rounds) = waves(blocks, resident, mps);
    let k_part = ceil_div(p.k, splits);
    let steps = ceil_div(k_part, tile.bk) as f64;
    let warps = (at_once * threads / 32) as f64;
    let acc = per_thread.accumulators() as f64;
    let per_warp = (acc / c.full_issue_accumulators).min(1.0) * c.issue_per_warp;
    let issue = (warps * per_warp).min(ISSUE_PER_MP);
    let operands = (per_thread.rows + per_thread.cols) as f64;
    let step_instructions =
        tile.bk as f64 * (acc + operands * c.loads_per_operand + c.step_instructions) * warps;
    // The shared memory a k step moves on the multiprocessor: each resident thread's
    // operand fragments, each resident block's stored stage.
    let shared_bytes = (at_once
        * tile.bk
        * 4
        * (threads * (per_thread.rows + per_thread.cols) + tile.block_m + tile.block_n))
        as f64;
    let shared = shared_bytes / c.shared_bytes_per_cycle;
    let step = (step_instructions / issue).max(shared).max(c.step_latency);
    let compute = rounds as f64 * (steps * step + c.epilogue_per_accumulator * acc);
    let operand_bytes = (blocks * (tile.block_m + tile.block_n) * k_part * 4) as f64;
    let memory = operand_bytes / (c.global_bytes_per_cycle * mps as f64);
    let mut cycles = compute.max(memory) + c.launch;
    if splits > 1 {
        let partials = (splits * p.m * p.n * p.batch * 4 * 2) as f64;
        cycles += c.split_launch + partials / (c.l2_bytes_per_cycle * mps as f64);
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

    const EIGHT: ThreadTile = ThreadTile {
        rows: 8,
        cols: 8,
        min_blocks: 0,
    };

    #[test]
    fn more_blocks_than_a_wave_take_longer_and_splits_fill_idle_multiprocessors() {
        let t = tile(64, 128, 128);
        // 128 blocks, one a multiprocessor; 512, four where three fit at once (153
        // registers a thread): two rounds.
        let one = estimate(&t, EIGHT, Product::whole(1024, 1024, 1024, 1), 1, 132);
        let two = estimate(&t, EIGHT, Product::whole(4096, 1024, 1024, 1), 1, 132);
        assert_eq!((one.blocks, two.blocks, two.resident), (128, 512, 3));
        assert!(two.cycles > one.cycles);
        // 256 blocks, two at once in one round: longer than one block alone, as the two
        // share the multiprocessor's shared memory. (Until 2026-11-27g the model had no
        // such term and estimated the same time: eight warps stayed under the four
        // instructions a cycle a multiprocessor issues.)
        let pair = estimate(&t, EIGHT, Product::whole(2048, 1024, 1024, 1), 1, 132);
        assert_eq!(pair.blocks, 256);
        assert!(pair.cycles > one.cycles, "{pair:?} {one:?}");
        // 8 tiles over 132 multiprocessors with a 16384-long sum: splitting it in 16
        // parts gives 128 blocks, far faster than 8 blocks walking it whole.
        let p = Product::split(128, 256, 16384);
        let whole = estimate(&t, EIGHT, p, 1, 132);
        let split = estimate(&t, EIGHT, p, 16, 132);
        assert!(split.cycles * 4.0 < whole.cycles, "{split:?} {whole:?}");
    }

    #[test]
    fn registers_bound_the_blocks_a_multiprocessor_holds() {
        // 128 accumulators in 256 threads: 233 registers each, one block per 64K.
        let big = ThreadTile {
            rows: 16,
            cols: 8,
            min_blocks: 0,
        };
        let e = estimate(
            &tile(256, 128, 256),
            big,
            Product::whole(4096, 4096, 64, 1),
            1,
            132,
        );
        assert_eq!(e.resident, 1);
        // 16 accumulators and 8 operands in 64 threads: 89 registers each (57 besides);
        // threads alone would allow 32.
        let small = ThreadTile {
            rows: 4,
            cols: 4,
            min_blocks: 0,
        };
        let e = estimate(
            &tile(16, 64, 64),
            small,
            Product::whole(4096, 4096, 64, 1),
            1,
            132,
        );
        assert_eq!(e.resident, 65536 / (64 * (16 + 2 * 8 + REGISTERS_BESIDES)));
        // A tiny tile of few threads hits the cap on blocks.
        let tiny = ThreadTile {
            rows: 1,
            cols: 1,
            min_blocks: 0,
        };
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
