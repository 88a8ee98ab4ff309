//! The fp16 matmul template's schedule space: from the target's matrix units, threads,
//! shared memory and registers, never from the input size.
//!
//! Where the target has matrix units, the configs use its largest square tile (`mma`),
//! blocks of 4 to 8 warps, 2×2 to 4×4 fragments per warp (and 3×4: tiles of 48·wm rows,
//! which fit GEMM heights such as 25088 = 131 × 192 in one wave) and k steps of 32 and 64
//! (and 16 where copies into shared memory go element by element: WGSL, MSL); where it
//! has none, the same warp tiles on CUDA cores (`mma = 0`, no 3×4). A config stays when
//! its threads, shared memory (two stages plus staging) and accumulators fit.

use super::F16Params;
use crate::tiling::{limits_over_views, most_unrolled};
use crate::{Config, within};
use weft_codegen_common::TargetLimits;

const WARPS: [[i64; 2]; 4] = [[2, 2], [2, 4], [4, 2], [4, 4]];
const FRAGS: [[i64; 2]; 7] = [[2, 2], [2, 4], [4, 2], [4, 4], [1, 2], [8, 4], [3, 4]];
/// k steps where tiles reach shared memory in 16-byte copies (CUDA).
const BLOCK_K: [i64; 2] = [32, 64];
/// Where they go element by element to feed matrix units (WGSL stores an f16 at a time:
/// it cannot store a `vec4<f16>` into the `array<f16>` that cooperative-matrix loads
/// read), a k step of 16 too: larger block tiles fit the same shared memory (256×128×16
/// in 48 KiB), and the stores per multiply fall with the tile's perimeter over its area.
const BLOCK_K_ELEMENTWISE: [i64; 3] = [16, 32, 64];
/// Row tiles a block-order group spans (`group`): consecutive blocks walk 8 row tiles of
/// one column strip, so the strip's `B` tiles are reused from L2. Every config of the
/// space and the rules' fixed tiles take it.
pub const GROUP: i64 = 8;

/// The matrix-unit tile a target uses: its largest, or 0 for CUDA cores.
fn unit(r: &TargetLimits) -> i64 {
    r.f16_mma_sizes().first().copied().unwrap_or(0)
}

/// Halves per global load: 16 bytes where the compiler takes a register cap (CUDA: one
/// `LDG.128`, one `STS.128`), else 8. WGSL copies lane by lane into shared memory, and
/// 8 consecutive halves per thread made those stores conflict more: measured on an H100
/// through Vulkan (2026-11-22), 16-byte loads took the 1024³ matmul from 28.5 to 44.9 µs.
fn vec_for(r: &TargetLimits) -> i64 {
    if r.register_cap { 8 } else { 4 }
}

/// Register-staged copies first (the default), and where the emitter has asynchronous
/// ones (CUDA, the target with a register cap; `cp.async` needs sm_80 and falls back to a
/// plain copy below) those too, for the tuner. With two stages `cp.async` measured slower
/// on an H100 (2026-11-23, tuned, 4096³: 515 against 474 µs; conv 224²: 27.3 against
/// 22.2 µs): the copy is waited for at the same barrier as the staged one, and the
/// staging it saves was not the limit. Deeper pipelines (`st` = 3, 4) are where it pays.
fn copies(r: &TargetLimits) -> Vec<bool> {
    if r.register_cap && !r.f16_mma_sizes().is_empty() {
        vec![false, true]
    } else {
        vec![false]
    }
}

/// Whether the target feeds matrix units from tiles copied into shared memory element by
/// element (WGSL, MSL: no register cap; WGSL stores one f16 at a time). Such targets also
/// get a k step of 16 (`BLOCK_K_ELEMENTWISE`) and copies through fragments (`cc`); CUDA
/// copies 16 bytes a thread and never stores operand fragments.
pub(super) fn elementwise_matrix_copies(r: &TargetLimits) -> bool {
    !r.register_cap && !r.f16_mma_sizes().is_empty()
}

/// Registers a thread of `p` holds at once on `r`, estimated.
fn registers(p: &F16Params, r: &TargetLimits) -> i64 {
    if p.mma == 0 && r.hoists_unrolled_loads {
        // f32 accumulators; the operands of `ku` sub-steps, loaded ahead of their
        // multiplies (see [`F16Params::k_unroll`]); the staged global loads (two halves a
        // register); addresses and indices (an im2col's more: [`limits_over_views`]).
        // Over this space's CUDA-core configs hipcc 5.2 allocated at most 23 more than
        // this for gfx90a and gfx1100, and never past their limits
        // (`docs/amd-registers.md`).
        let (rows, cols) = p.lane_tile();
        let staged = (p.block_m() + p.block_n()) * p.bk / p.threads() / 2;
        return p.accumulators() + p.k_unroll * (rows + cols) + staged + 16;
    }
    // f32 accumulators, the A and B fragments, staged loads and addresses; a second set
    // of fragments (4 registers a tile on CUDA).
    // A second set of staging registers with `pf` = 2 (two halves a register).
    let staged = (p.block_m() + p.block_n()) * p.bk / p.threads() / 2;
    p.accumulators()
        + 64
        + (p.frag_buffers - 1) * (p.frags[0] + p.frags[1]) * 4
        + (p.prefetch - 1) * staged
}

fn fits(p: &F16Params, r: &TargetLimits) -> bool {
    within(p.threads(), r.max_threads_per_block)
        && within(p.shared_bytes(), r.max_shared_bytes)
        && within(registers(p, r), r.max_registers)
}

/// `p` with the most sub-steps unrolled ([`most_unrolled`]) that fit `r`'s registers on CUDA
/// cores where `r`'s compiler hoists unrolled loads (`None`: none fits); otherwise
/// unchanged (the whole k step unrolled).
fn with_unroll(p: F16Params, r: &TargetLimits) -> Option<F16Params> {
    if p.mma != 0 || !r.hoists_unrolled_loads {
        return Some(p);
    }
    let fits = |ku| {
        let q = F16Params { k_unroll: ku, ..p };
        within(registers(&q, r), r.max_registers)
    };
    most_unrolled(p.bk, fits).map(|ku| F16Params { k_unroll: ku, ..p })
}

/// Whether the A tile's widest loads cover it in whole passes. Only tiles of three
/// fragments along m can fail it: those that do are right (a last pass leaves threads
/// idle) but slower, and would take the space past 300.
fn loads_in_whole_passes(p: &F16Params) -> bool {
    let rows_per_pass = p.threads() * p.vec / p.bk;
    p.block_m() % rows_per_pass.min(p.block_m()) == 0
}

/// Every config `resources` can run, in a fixed order.
pub fn space(resources: &TargetLimits) -> Vec<Config> {
    let mma = unit(resources);
    let coop_copies: &[bool] = if elementwise_matrix_copies(resources) {
        &[false, true]
    } else {
        &[false]
    };
    let mut out = Vec::new();
    for warps in WARPS {
        for frags in FRAGS {
            // Three fragments along m fill a GPU's SMs in one wave at GEMM heights that
            // are not powers of two; on CUDA cores (CPU drivers, plain WebGPU) they only
            // make long shaders.
            if frags[0] == 3 && mma == 0 {
                continue;
            }
            let block_k: &[i64] = if elementwise_matrix_copies(resources) {
                &BLOCK_K_ELEMENTWISE
            } else {
                &BLOCK_K
            };
            for &bk in block_k {
                for async_copy in copies(resources) {
                    // Two stages of cp.async measured slower than register staging (see
                    // `copies`): asynchronous copies come in deeper pipelines only.
                    let stages: &[i64] = if async_copy { &[3, 4] } else { &[2] };
                    for &stages in stages {
                        let sets: &[i64] = if mma == 0 { &[1] } else { &[1, 2] };
                        for (&frag_buffers, &coop_copy) in sets
                            .iter()
                            .flat_map(|s| coop_copies.iter().map(move |c| (s, c)))
                        {
                            let p = F16Params {
                                mma,
                                warps,
                                frags,
                                bk,
                                group: GROUP,
                                vec: vec_for(resources),
                                async_copy,
                                stages,
                                frag_buffers,
                                coop_copy,
                                warpgroups: 0,
                                k_unroll: bk,
                                prefetch: 1,
                            };
                            let Some(p) = with_unroll(p, resources) else {
                                continue;
                            };
                            // `from_config` holds the rules between parameters (`cc = 1`
                            // needs a whole number of fragment tiles per warp).
                            let valid = F16Params::from_config(&p.config()).is_ok();
                            if valid && loads_in_whole_passes(&p) && fits(&p, resources) {
                                out.push(p.config());
                                // Where tiles are stored element by element (no
                                // `cp.async`), loads two steps ahead too.
                                let ahead = F16Params { prefetch: 2, ..p };
                                if elementwise_matrix_copies(resources)
                                    && !async_copy
                                    && !coop_copy
                                    && fits(&ahead, resources)
                                {
                                    out.push(ahead.config());
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out.extend(hopper_space(resources));
    out
}

/// Hopper's configs (`wg` > 0) where the target has warpgroup MMAs (`cuda
/// -arch=sm_90a`): 1 or 2 warpgroups, 1 or 2 m64 tiles each, n of 64, 128 or 256, 3 to 5
/// stages; those whose accumulators (at most 128 registers a thread) and shared memory
/// fit.
fn hopper_space(resources: &TargetLimits) -> Vec<Config> {
    if !resources.warpgroup_mma() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for warpgroups in [1, 2] {
        for fm in [1, 2] {
            for fn_ in [4, 8, 16] {
                for stages in [3, 4, 5] {
                    let p = F16Params {
                        mma: 16,
                        warps: [4 * warpgroups, 1],
                        frags: [fm, fn_],
                        bk: 64,
                        group: GROUP,
                        vec: 8,
                        async_copy: false,
                        stages,
                        frag_buffers: 1,
                        coop_copy: false,
                        warpgroups,
                        k_unroll: 64,
                        prefetch: 1,
                    };
                    if F16Params::from_config(&p.config()).is_ok()
                        && within(p.shared_bytes(), resources.max_shared_bytes)
                    {
                        out.push(p.config());
                    }
                }
            }
        }
    }
    out
}

/// The space of the template over computed operands (an implicit GEMM's im2col view): no
/// copies through fragments, which read placeholders only (the configs with `cc = 1`
/// would build the same kernel as their `cc = 0` twins), within [`limits_over_views`].
/// Hopper's configs stay: over views their threads gather the tiles that TMA copies
/// from stored matrices ([`super::hopper_views`]).
pub fn space_over_views(resources: &TargetLimits) -> Vec<Config> {
    space(&limits_over_views(resources))
        .into_iter()
        .filter(|c| c.get("cc") != Some(1))
        .collect()
}

/// A 128×128 tile of 8 warps with 4×2 fragments each and a k step of 32 where it fits
/// (cuBLAS's tensor-core tile), else the largest config of the space.
pub fn default_config(resources: &TargetLimits) -> Config {
    let mma = unit(resources);
    let f = if mma == 0 { 16 } else { mma };
    let preferred = F16Params {
        mma,
        warps: [2, 4],
        frags: [128 / (2 * f), 128 / (4 * f)],
        bk: 32,
        group: GROUP,
        vec: vec_for(resources),
        async_copy: copies(resources)[0],
        stages: 2,
        frag_buffers: 1,
        coop_copy: false,
        warpgroups: 0,
        k_unroll: 32,
        prefetch: 1,
    };
    let all = space(resources);
    if let Some(preferred) = with_unroll(preferred, resources)
        && all.contains(&preferred.config())
    {
        return preferred.config();
    }
    // Else the largest block tile of the space with a k step of 32.
    let best = all
        .iter()
        .filter_map(|c| F16Params::from_config(c).ok())
        // One set of fragments, staged copies a step ahead: the plain variant of each
        // tile; and tiles of powers of two (three fragments along m are for filling a
        // GPU's SMs in one wave at particular GEMM heights, which the tuner finds).
        .filter(|p| {
            p.bk == 32
                && p.frag_buffers == 1
                && !p.async_copy
                && !p.coop_copy
                && p.prefetch == 1
                && p.frags[0] != 3
        })
        .max_by_key(|p| (p.block_m() * p.block_n(), p.threads()));
    if let Some(p) = best {
        return p.config();
    }
    F16Params {
        mma,
        warps: [2, 2],
        frags: [1, 2],
        bk: 16,
        group: GROUP,
        vec: vec_for(resources),
        async_copy: false,
        stages: 2,
        frag_buffers: 1,
        coop_copy: false,
        warpgroups: 0,
        k_unroll: 16,
        prefetch: 1,
    }
    .config()
}

/// [`default_config`] within [`limits_over_views`]: the fp16 implicit-GEMM convolutions'
/// (a config of [`space_over_views`]: the default takes neither `cc = 1` nor `wg`).
pub fn default_config_over_views(resources: &TargetLimits) -> Config {
    default_config(&limits_over_views(resources))
}
