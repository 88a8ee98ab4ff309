//! The matmul template's schedule space: hardware-centric (seed 002 section 4.3).
//!
//! Every parameter comes from a short list of shapes that suit GPUs — thread tiles of
//! 4×4 and 8×4, one or two repeats of a warp's tile per direction, lanes laid out 4×8
//! or 8×4, blocks of 2 to 8 warps, k steps of 8 and 16 — and a config stays in the space
//! when the target can run it: its threads, its shared memory (two stages) and its
//! estimated registers within the target's [`TargetLimits`]. Where the compiler takes a
//! register cap (CUDA), the configs with 64 accumulators per thread and at least 4 warps
//! come twice: with the compiler's register choice, and capped at 128 registers so that
//! twice the blocks fit (a kernel one register over 128 halves its occupancy). Where a
//! thread may use 255 registers (native backends), blocks of 4 to 8 warps may also take
//! 16×8 outputs per thread, as cuBLAS's SIMT kernels do; and row tiles (one row of C a
//! block, for products of one row) come in four configs. Where the compiler takes a cap
//! and does not hoist unrolled loads (CUDA), a 96×128 tile of four warps capped for three
//! blocks a multiprocessor fills the last round that 128×128 tiles overflow
//! ([`THIRD_ROWS`]). Nothing depends on the input size: clamped loads and a tested last k tile make every config
//! right at every M, N, K.
//! At most 200 configs.

use super::MatmulParams;
use crate::tiling::{limits_over_views, most_unrolled};
use crate::{Config, within};
use weft_codegen_common::TargetLimits;

const THREAD_TILES: [[i64; 2]; 2] = [[4, 4], [8, 4]];
const REPEATS: [[i64; 2]; 4] = [[1, 1], [1, 2], [2, 1], [2, 2]];
const LANES: [[i64; 2]; 2] = [[4, 8], [8, 4]];
const WARPS: [[i64; 2]; 5] = [[1, 2], [2, 1], [2, 2], [2, 4], [4, 2]];
const BLOCK_K: [i64; 2] = [8, 16];
/// Tile rows per swizzle group: enough for L2 reuse at large sizes, and clamped to the
/// number of tile rows at small ones.
const GROUP: i64 = 8;
/// Accumulators per thread of most configs: 8×8 (64) leaves room for the rest of the
/// kernel in 128 registers.
const MAX_ACCUMULATORS: i64 = 64;
/// cuBLAS's own SIMT kernels keep 128 accumulators (16×8) per thread, in blocks of 4 to
/// 8 warps: for targets whose threads may use 255 registers.
const LARGE_TILE: ([i64; 2], [i64; 2]) = ([8, 4], [2, 2]);

/// Row tiles: one row of C, a warp's 32 lanes across 32 columns, 4 or 8 warps side by
/// side, k steps of 16 or 32. For products of one row (a classifier's last layer at
/// batch 1, a GEMV), where a tile of 16 or more rows computes zeros past the first and
/// only a split reduction gives the GPU blocks: on an H100 they ran 1×768×3072 in 5.2 µs
/// against 11.1 for the rule's 32-row tile and 7.4 for cuBLAS
/// (`measurements/h100-2026-11-27c/B-gemv.txt`).
const ROW_WARPS: [[i64; 2]; 2] = [[1, 4], [1, 8]];
const ROW_BLOCK_K: [i64; 2] = [16, 32];

/// The 96×128 tile: four warps, each repeating its 16×32 warp tile three times down and
/// twice across (12×8 outputs a thread), registers capped for three blocks a
/// multiprocessor (168 a thread; ptxas: no spills at k steps of 8 or 16). Where 128×128
/// tiles overflow the one round of two a multiprocessor that an H100 holds (from 2049³:
/// 17² = 289 tiles over 264 places), these fill one round of three: on an H100 2049³
/// ran in 447 µs against 660 for the rule's pick of before and 450 for cuBLAS, 2100³ in
/// 441 against 595, 3001³ in 1.277 ms against 1.329; at 2048³, where the 128×128 tiles
/// fit one round, in 405 µs against their 366
/// (`measurements/h100-2026-11-27i/B-times.txt`). Only where the compiler takes a
/// register cap and does not hoist unrolled loads (CUDA): without the cap the tile holds
/// two blocks a multiprocessor (219 registers) and ran 2100³ in 620 µs.
const THIRD_ROWS: MatmulParams = MatmulParams {
    warps: [2, 2],
    repeat: [3, 2],
    lanes: [4, 8],
    tile: [4, 4],
    bk: 16,
    group: GROUP,
    min_blocks: 3,
    k_unroll: 16,
};

/// Whether `p` is the space's 96-row tile ([`THIRD_ROWS`]): three repeats down.
pub fn is_third_row_tile(p: &MatmulParams) -> bool {
    p.repeat[0] == 3
}

/// A point of the space, with the fixed swizzle and no register cap, its k step unrolled
/// whole.
fn point(
    warps: [i64; 2],
    repeat: [i64; 2],
    lanes: [i64; 2],
    tile: [i64; 2],
    bk: i64,
) -> MatmulParams {
    MatmulParams {
        warps,
        repeat,
        lanes,
        tile,
        bk,
        group: GROUP,
        min_blocks: 0,
        k_unroll: bk,
    }
}

/// True if the target can run `p`.
fn fits(p: &MatmulParams, r: &TargetLimits) -> bool {
    within(p.threads(), r.max_threads_per_block)
        && within(p.shared_bytes(), r.max_shared_bytes)
        && within(p.registers_on(r), r.max_registers)
}

/// `p` as the space holds it on `r`: where `r`'s compiler hoists unrolled loads, with
/// the most sub-steps unrolled at once whose registers fit `registers` (`None`: none
/// fit); elsewhere unchanged, its k step unrolled whole.
fn with_unroll(p: MatmulParams, r: &TargetLimits, registers: u64) -> Option<MatmulParams> {
    if !r.hoists_unrolled_loads {
        return Some(p);
    }
    let fits = |ku| {
        within(
            MatmulParams { k_unroll: ku, ..p }.registers_on(r),
            registers,
        )
    };
    most_unrolled(p.bk, fits).map(|ku| MatmulParams { k_unroll: ku, ..p })
}

/// `p` with registers capped at 128 (`mb`), its unrolling fitted to that cap.
fn capped(p: MatmulParams, r: &TargetLimits) -> Option<MatmulParams> {
    let p = MatmulParams {
        min_blocks: p.blocks_at_128_registers(),
        ..p
    };
    with_unroll(p, r, 128)
}

/// Every config of the space that `resources` can run, in a fixed order.
///
/// ```
/// use weft_codegen_common::TargetLimits;
/// use weft_kernels::matmul;
///
/// let cuda = matmul::space(&TargetLimits::cuda());
/// assert!(cuda.len() <= 200 && cuda.len() > 100);
/// // WebGPU's 16 KiB and 256 invocations leave out the larger tiles.
/// assert!(matmul::space(&TargetLimits::webgpu_default()).len() < cuda.len());
/// ```
pub fn space(resources: &TargetLimits) -> Vec<Config> {
    let mut out = Vec::new();
    for tile in THREAD_TILES {
        for repeat in REPEATS {
            if repeat[0] * tile[0] * repeat[1] * tile[1] > MAX_ACCUMULATORS {
                continue;
            }
            for lanes in LANES {
                for warps in WARPS {
                    for bk in BLOCK_K {
                        let p = point(warps, repeat, lanes, tile, bk);
                        let Some(p) = with_unroll(p, resources, resources.max_registers) else {
                            continue;
                        };
                        if !fits(&p, resources) {
                            continue;
                        }
                        out.push(p.config());
                        if resources.register_cap
                            && p.accumulators() == MAX_ACCUMULATORS
                            && p.threads() >= 128
                            && let Some(capped) = capped(p, resources)
                        {
                            out.push(capped.config());
                        }
                    }
                }
            }
        }
    }
    for warps in ROW_WARPS {
        for bk in ROW_BLOCK_K {
            let p = point(warps, [1, 1], [1, 32], [1, 1], bk);
            if let Some(p) = with_unroll(p, resources, resources.max_registers)
                && fits(&p, resources)
            {
                out.push(p.config());
            }
        }
    }
    if resources.register_cap && !resources.hoists_unrolled_loads {
        for bk in BLOCK_K {
            let p = MatmulParams {
                bk,
                k_unroll: bk,
                ..THIRD_ROWS
            };
            if fits(&p, resources) {
                out.push(p.config());
            }
        }
    }
    if resources.max_registers >= 255 {
        let (tile, repeat) = LARGE_TILE;
        for lanes in LANES {
            for warps in WARPS.into_iter().filter(|w| w[0] * w[1] >= 4) {
                for bk in BLOCK_K {
                    let p = point(warps, repeat, lanes, tile, bk);
                    if let Some(p) = with_unroll(p, resources, resources.max_registers)
                        && fits(&p, resources)
                    {
                        out.push(p.config());
                    }
                }
            }
        }
    }
    out
}

/// The space of the template over computed operands (the fp32 implicit-GEMM
/// convolutions' im2col views): [`space`] within [`limits_over_views`].
pub fn space_over_views(resources: &TargetLimits) -> Vec<Config> {
    space(&limits_over_views(resources))
}

/// [`default_config`] within [`space_over_views`].
pub fn default_config_over_views(resources: &TargetLimits) -> Config {
    default_config(&limits_over_views(resources))
}

/// The config used without a tuning record: seed 002's 128×128×8 tile of 256 threads
/// where it fits (with registers capped at 128 where the compiler takes a cap, so that
/// two blocks share a multiprocessor), else the largest block tile of the space (most
/// threads on a tie).
pub fn default_config(resources: &TargetLimits) -> Config {
    let seed = with_unroll(MatmulParams::SEED, resources, resources.max_registers);
    if let Some(seed) = seed.filter(|s| fits(s, resources)) {
        let capped = capped(seed, resources).filter(|_| resources.register_cap);
        return capped.unwrap_or(seed).config();
    }
    space(resources)
        .into_iter()
        .filter_map(|c| MatmulParams::from_config(&c).ok())
        .max_by_key(|p| (p.block_m() * p.block_n(), p.threads(), -p.bk))
        .unwrap_or(MatmulParams::SEED)
        .config()
}
