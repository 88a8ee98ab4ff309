//! One mma.sync tile for the large implicit GEMMs over views on Hopper: 128×64 blocks of
//! four warps, each 4×2 fragments of 16×16, k steps of 32 staged through registers.
//!
//! Why a fixed tile rather than the cost model's pick: at Inception-v3's three large 3×3
//! convolutions at batch 8 (`weft sweep --op conv2d-f16 --trials`, 48 sampled configs a
//! shape, H200, 2026-12-01, `measurements/h200-2026-12-01/call4`) this tile was the
//! fastest timed or within 2% of it at all three — 38.2, 39.7 and 61.0 µs against the
//! rule's 49.1 (a 64×64 mma.sync tile), 50.1 and 78.6 (gathered wgmma tiles) — where the
//! model prices it 20–27% high and the gathered wgmma tiles 30–45% low (it prices a wgmma
//! k step as if TMA copied both operands; over views the threads gather the im2col).
//! Until the model has a term for the threads' gather, fitted on such trials, the rule
//! takes this tile at products of at least [`MIN_TILES`] of its blocks whose reduction
//! is at least [`MIN_K`] long and not a multiple of [`WGMMA_STEP`].
//!
//! Measured with it at every convolution of the corpus it could reach at batch 8 (H200,
//! 2026-12-01, `measurements/h200-2026-12-01b/call5`, the rule's pick then the tile, µs):
//! Inception-v3's 3×3s 48.9 → 37.9 (288 long), 50.3 → 39.8 (288), 78.6 → 60.7 (720), the
//! 7×7 stems of ResNet-50, GoogLeNet and DenseNet-121 49.9 → 40.8 (147): faster; GoogLeNet's
//! 3×3 of 64 channels (576 long, a gathered wgmma tile) 29.9 → 35.0 and the 3×3 stems of 3
//! channels (27 long, one k step; MobileNetV2's) 11.8 → 14.4: slower, hence the two bounds
//! (Inception-v3's own 3×3 stem, 27 long, 22.3 → 20.0, is given up with them). Whole models
//! at batch 8 with the tile at every product of enough blocks (two alternated rounds):
//! Inception-v3 1.230 → 1.198 ms, ResNet-50 619.7 → 616.9 µs, DenseNet-121 1.064 → 1.061
//! ms, MobileNetV2 298.0 → 298.2 µs, GoogLeNet 455.4 → 460.6 µs (its 576-long 3×3, which
//! [`WGMMA_STEP`] now leaves to the cost model). Against ONNX Runtime with it (f16, batch
//! 8): Inception-v3 4.02e-2, GoogLeNet 1.66e-2 (tolerance 5e-2). `WEFT_CONV_WIDE_MMA=0`
//! ([`SWITCH`]) turns it off.

use weft_codegen_common::TargetLimits;

use super::F16Params;
use crate::{Config, ceil_div, rule};

/// The environment variable that leaves [`tile`] to the rule (`1`, or unset) or not
/// (`0`: the cost model's pick everywhere, for the A/B).
pub const SWITCH: &str = "WEFT_CONV_WIDE_MMA";

/// The shortest reduction [`tile`] is taken at: two of its k steps. With one (the 3×3
/// stems over 3 channels, 27 long) an 8-warp tile of the cost model was faster.
pub const MIN_K: i64 = 64;

/// The gathered wgmma tiles' k step. Where a reduction is a whole number of them (64
/// channels and more, in multiples of 64: each step one tap), the cost model's wgmma
/// pick was faster than [`tile`] (GoogLeNet's 576-long 3×3 at batch 8, 29.9 against 35.0
/// µs; at ResNet-50's batch-8 3×3s, 576 to 4608 long, the best wgmma tile ran 1.13–1.34×
/// faster than the whole mma.sync space on an H100, `WGMMA_VIEWS_MIN_TILES`).
pub const WGMMA_STEP: i64 = 64;

/// The fewest 128×64 blocks of a product at which [`tile`] is taken: the bound the
/// gathered wgmma tiles compete from (`WGMMA_VIEWS_MIN_TILES`, counted there in 64×64
/// tiles), here in the tile's own blocks, so at products twice as large; below it (every
/// batch-1 convolution of the corpus) the cost model's pick stands.
pub const MIN_TILES: i64 = 400;

/// The tile: 4 warps (2×2) of 4×2 fragments of 16×16, k steps of 32, 16-byte loads,
/// copies staged through registers, one fragment set, no warpgroups.
pub fn tile() -> F16Params {
    F16Params {
        mma: 16,
        warps: [2, 2],
        frags: [4, 2],
        bk: 32,
        group: 8,
        vec: 8,
        async_copy: false,
        stages: 2,
        frag_buffers: 1,
        coop_copy: false,
        warpgroups: 0,
        k_unroll: 32,
        prefetch: 1,
    }
}

/// What [`SWITCH`] takes, as its refusal says.
pub const VALUES: &str = "0 (off) or 1 (on, the default)";

/// Whether [`SWITCH`] leaves the tile to the rule: `Ok(true)` for `1` or unset, `Ok(false)`
/// for `0`, else `Err` with [`VALUES`].
pub fn asked() -> Result<bool, &'static str> {
    match std::env::var(SWITCH).as_deref() {
        Err(_) | Ok("1") => Ok(true),
        Ok("0") => Ok(false),
        Ok(_) => Err(VALUES),
    }
}

/// The rule's choice for an implicit GEMM over views `p` on `limits` when `on`
/// ([`asked`]): [`tile`], unsplit, where the target has warpgroup products (Hopper, where
/// it was measured), the product is one batch of at least [`MIN_TILES`] of its blocks, its
/// reduction at least [`MIN_K`] long and not a multiple of [`WGMMA_STEP`], its input not
/// computed at the loads, and `configs` (the space over views) holds it.
pub fn choose(
    limits: &TargetLimits,
    configs: &[Config],
    p: rule::Product,
    computed_a: bool,
    on: bool,
) -> Option<rule::Choice> {
    let t = tile();
    let blocks = ceil_div(p.m, t.block_m()) * ceil_div(p.n, t.block_n());
    let fits = on
        && limits.warpgroup_mma()
        && p.batch == 1
        && !computed_a
        && blocks >= MIN_TILES
        && p.k >= MIN_K
        && p.k % WGMMA_STEP != 0
        && configs.contains(&t.config());
    fits.then(|| {
        let why = format!(
            "rule: {}x{} mma.sync tile of 4 warps over views ({blocks} blocks, at least \
             {MIN_TILES}; {} long, not a multiple of {WGMMA_STEP}; {SWITCH}=0 leaves it to the \
             cost model)",
            t.block_m(),
            t.block_n(),
            p.k
        );
        (t.config(), 1, why)
    })
}
