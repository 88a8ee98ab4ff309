//! The fp16 template's stated rule: the config it takes with no tuning record, ranked by
//! the tensor-core cost model (`templates::rule`) over the template's space, with the
//! Hopper, element-wise-store and two-steps-ahead adjustments measured for it.

use weft_codegen_common::TargetLimits;

use super::{
    F16Params, default_config, default_config_over_views, hopper, space, space_over_views,
};
use crate::{Config, rule};

/// The stated rule's config for product `p` on `limits` ([`crate::rule`]), over
/// [`space_over_views`] where the operands are views (an implicit GEMM's im2col) and
/// over the whole [`space`] otherwise, ranked by the tensor-core cost model
/// ([`rule::tensor`]). Only the plain variant of each mma.sync tile competes (one set of
/// fragments, copies staged through registers, as the default): the pipelined ones are
/// for the tuner, which measures them. On Hopper (sm_90a) the wgmma tiles with 4 stages
/// compete too, where TMA can copy the operands and the product is not a batch.
///
/// Where tiles are stored element by element (WGSL, MSL) the model takes the constants
/// fitted on Vulkan ([`rule::tensor::ELEMENTWISE`]) and weighs 16-warp tiles too (their
/// fragments are few; on Vulkan they were the best at 3 of 24 shapes,
/// `measurements/h100-2026-11-27b`), never copies through fragments (0.67× of the
/// best at most there). Over views, with 16×16 matrices, it takes
/// [`views_rule_elementwise`], measured on gathered operands; elsewhere over views the
/// block-count rule (the fit saw no gathered operands).
pub fn rule_config(limits: &TargetLimits, p: rule::Product, over_views: bool) -> rule::Choice {
    rule_config_with(limits, p, over_views, false)
}

/// [`rule_config`] for a product whose `a` operand is computed at its loads
/// (`computed_a`: a fused batch norm and ReLU before a convolution), where few tiles
/// take the split forms only ([`few_tiles`]). The environment's switches
/// ([`Switches::from_env`]) say which of the rule's measured forms apply.
pub fn rule_config_with(
    limits: &TargetLimits,
    p: rule::Product,
    over_views: bool,
    computed_a: bool,
) -> rule::Choice {
    rule_config_switched(limits, p, over_views, computed_a, Switches::from_env())
}

/// The rule's switches read from the environment, for the A/Bs of forms not yet the
/// default (or no longer): each one's module says what it measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switches {
    /// Over views on Hopper, the 128×64 mma.sync tile where it was measured faster
    /// ([`super::wide_views`]; `WEFT_CONV_WIDE_MMA`, on unless `0`).
    pub wide: bool,
    /// Over views on targets storing tiles element by element, the cost model at several
    /// waves ([`super::vk_views`]; `WEFT_VK_VIEWS=model`, off by default).
    pub vk_model: bool,
    /// Over views on targets storing tiles element by element, the shortest part of a
    /// split reduction, 0 for no split ([`super::vk_split`]; `WEFT_VK_SPLIT`, unset:
    /// [`VIEWS_MIN_PART`]).
    pub vk_min_part: i64,
}

impl Switches {
    /// The switches as the environment sets them. A value a switch does not take reads
    /// as its default here; the model (`weft_model`) refuses it, naming it, before any
    /// kernel is scheduled.
    pub fn from_env() -> Switches {
        Switches {
            wide: super::wide_views::asked().unwrap_or(true),
            vk_model: super::vk_views::asked().unwrap_or(false),
            vk_min_part: super::vk_split::asked()
                .unwrap_or(None)
                .unwrap_or(VIEWS_MIN_PART),
        }
    }
}

/// [`rule_config_with`] under the given `switches` instead of the environment's.
pub fn rule_config_switched(
    limits: &TargetLimits,
    p: rule::Product,
    over_views: bool,
    computed_a: bool,
    switches: Switches,
) -> rule::Choice {
    let configs = if over_views {
        space_over_views(limits)
    } else {
        space(limits)
    };
    let elementwise = space::elementwise_matrix_copies(limits);
    // Several waves over views, where asked: the cost model ranks the elementwise tiles
    // as it does for stored operands.
    let by_model = elementwise && over_views && super::vk_views::by_model(p, switches.vk_model);
    if elementwise
        && over_views
        && !by_model
        && let Some(choice) =
            views_rule_elementwise_with(&configs, p, deep_steps_asked(limits), switches.vk_min_part)
    {
        return choice;
    }
    if !elementwise
        && over_views
        && let Some(choice) =
            super::wide_views::choose(limits, &configs, p, computed_a, switches.wide)
    {
        return choice;
    }
    let max_threads = if elementwise {
        MAX_RULE_THREADS_ELEMENTWISE
    } else {
        MAX_RULE_THREADS
    };
    let mut candidates = tiles(limits, &configs, |t| {
        t.warpgroups == 0
            && t.frag_buffers == 1
            && !t.async_copy
            && !t.coop_copy
            && t.threads() <= max_threads
    });
    if elementwise && over_views && !by_model {
        for t in &mut candidates {
            t.matrix = None;
        }
    }
    if computed_a && !elementwise && over_views && few_tiles(p) {
        // Few tiles over views: only the tiles that can split (see [`few_tiles`]).
        let splittable = |t: &rule::Tile| t.matrix.as_ref().is_some_and(|x| x.splits);
        if candidates.iter().any(splittable) {
            candidates.retain(splittable);
        }
    }
    // Over views (thread-gathered wgmma tiles) the model was fitted on no measurement:
    // the tuner times those tiles, the rule does not weigh them.
    // Over views the wgmma tiles gather their operands with the threads: they compete
    // only at products of many tiles, at least 64 columns wide, unsplit (see
    // [`WGMMA_VIEWS_MIN_TILES`]).
    let gathered_pays = !over_views
        || (p.n >= 64
            && crate::ceil_div(p.m, 64) * crate::ceil_div(p.n, 64) >= WGMMA_VIEWS_MIN_TILES);
    if limits.warpgroup_mma()
        && p.batch == 1
        && p.m >= WGMMA_RULE_MIN_ROWS
        && hopper::unfit(p.n, p.k).is_none()
        && gathered_pays
    {
        let mut wgmma = tiles(limits, &configs, |t| {
            t.warpgroups > 0
                && WGMMA_RULE_STAGES.contains(&t.stages)
                && t.block_m() * t.block_n() <= WGMMA_RULE_MAX_TILE
        });
        if over_views {
            for t in &mut wgmma {
                if let Some(x) = &mut t.matrix {
                    x.splits = false;
                }
            }
        }
        candidates.extend(wgmma);
    }
    let (config, splits, why) = rule::pick_or(&candidates, p, limits.multiprocessors, || {
        if over_views {
            default_config_over_views(limits)
        } else {
            default_config(limits)
        }
    });
    // Where tiles are stored element by element, two adjustments measured after the cost
    // model was fitted (it ranks the tiles): two fragment sets where the pick's k step is
    // one sub-step and that twin is in the space (its registers fit; see
    // [`pipelines_fragments`]), and loads two steps ahead where a warp's tile is small
    // (see [`runs_ahead`]).
    if elementwise
        && !over_views
        && let Ok(pick) = F16Params::from_config(&config)
    {
        let (mut q, mut why) = (pick, why);
        let two_sets = F16Params {
            frag_buffers: 2,
            ..q
        };
        if pipelines_fragments(&q) && configs.contains(&two_sets.config()) {
            q = two_sets;
            why = format!("{why}; two fragment sets (one sub-step a k step)");
        }
        let ahead = F16Params { prefetch: 2, ..q };
        if runs_ahead(&ahead) {
            q = ahead;
            why = format!("{why}; loads two k steps ahead (a small warp tile)");
        }
        let config = if q == pick { config } else { q.config() };
        return (config, splits, why);
    }
    (config, splits, why)
}

/// Whether an implicit GEMM over views (gathered operands, CUDA/HIP) whose input is
/// computed at its loads has so few tiles that only the split-capable tiles compete. The
/// cost model was fitted on products of stored operands; a k step that computes its
/// operand as it gathers it (DenseNet's batch norm and ReLU before each convolution)
/// costs far more than it prices: DenseNet-121's 1×1 layers at 14², 14 tiles of 32×64
/// and 544–704 long sums, ran 21–27 µs a layer on 64-deep k steps unsplit, and their
/// neighbours of 736–896, split in 4 on 32-deep steps, 13–16 µs; the whole model 1.363 →
/// 1.226 ms with the rule. Over stored inputs the same rule lost: GoogLeNet (no computed
/// input; its short sums ran well unsplit) 257 → 314 µs, so it is kept to computed
/// inputs (H200, measurements/h200-2026-11-29f). Fewer 32×64 tiles than half of
/// [`rule::ENOUGH_TILES`]: the split forms only, and the model picks among them.
fn few_tiles(p: rule::Product) -> bool {
    p.split && crate::ceil_div(p.m, 32) * crate::ceil_div(p.n, 64) < rule::ENOUGH_TILES / 2
}

/// The shortest part of the reduction [`views_rule_elementwise`] splits into: at
/// ResNet-50's deep layers on an H200 through Vulkan the fastest configs timed split
/// into parts of 128 to 144.
pub const VIEWS_MIN_PART: i64 = 128;

/// The most parts [`views_rule_elementwise`] splits into (7×7 layers of 4608-long
/// reductions ran fastest in 32).
pub const VIEWS_MAX_SPLITS: i64 = 32;

/// The reduction below which [`views_rule_elementwise`] takes k steps of 16 (ResNet-50's
/// stem, 147 long: 14.5 against 22.4 µs with steps of 32 on an H200 through Vulkan).
pub const VIEWS_SHORT_K: i64 = 256;

/// The rule over views (an implicit GEMM's im2col) where tiles are stored element by
/// element with 16×16 matrices (Vulkan's cooperative matrices): warps of one by two
/// fragments, k steps of 32 ([`VIEWS_SHORT_K`]: 16 below), loads two steps ahead, one
/// fragment set; of those tiles, the largest useful one that gives at least three
/// quarters of [`rule::ENOUGH_TILES`] blocks, with its reduction split in a power of two
/// of parts of at least [`VIEWS_MIN_PART`] (at most [`VIEWS_MAX_SPLITS`]) where its whole
/// tiles give fewer than half (ties: the smaller tile, more threads, fewer parts, the
/// wider tile); else the tile giving the most blocks. `None` where the
/// space has no such tile (Metal's 8×8 simdgroup matrices: unmeasured, the block-count
/// rule serves them).
///
/// Measured on an H200 through Vulkan (2026-11-28d, `measurements/h100-2026-11-28d`,
/// the whole space of 139 configs at nine of ResNet-50's layers): the block-count rule
/// took k steps of 16, 2×2 warps and up to 3×4 fragments a warp, at 0.16–0.75× of the
/// best timed (the stem 90.8 against 14.2 µs); this rule's picks are at 0.82–1.00×
/// (geometric mean 0.97×). The fastest configs there were all 1×2-fragment warps.
pub fn views_rule_elementwise(configs: &[Config], p: rule::Product) -> Option<rule::Choice> {
    views_rule_elementwise_with(configs, p, false, VIEWS_MIN_PART)
}

/// The environment variable whose values `deep` and `2` ask [`views_rule_elementwise_with`]
/// for [`DEEP_STEP`]-deep k steps (`1` asks the WGSL emitter for branch-free gathers
/// only, `2` for both, `0` for neither; the emitter refuses any other value, naming it,
/// so a Vulkan compile never runs with one). Unset: the deep steps where the target
/// takes them by default ([`TargetLimits::vk_conv_by_default`]: Vulkan's cooperative
/// matrices, `docs/vulkan-small-convs.md`), else none.
pub const DEEP_STEPS_SWITCH: &str = "WEFT_VK_CONV";

/// Whether [`DEEP_STEPS_SWITCH`] asks for the deep k steps on a target of `limits`
/// (`deep` or `2`; unset: [`TargetLimits::vk_conv_by_default`]).
pub fn deep_steps_asked(limits: &TargetLimits) -> bool {
    match std::env::var(DEEP_STEPS_SWITCH).as_deref() {
        Err(_) => limits.vk_conv_by_default(),
        Ok(v) => matches!(v, "2" | "deep"),
    }
}

/// The k step [`views_rule_elementwise_with`] takes with `deep`: CUDA's at the same
/// convolutions (GoogLeNet's 3×3 at 14², 216 long: 4 steps of 64 at 4.0 µs on an H200
/// through CUDA, 14 of 16 at 16.6 µs through Vulkan).
pub const DEEP_STEP: i64 = 64;

/// [`views_rule_elementwise`], with `deep` its pick taking k steps of [`DEEP_STEP`] where
/// it is unsplit and gives at most [`rule::ENOUGH_TILES`] blocks (about one a
/// multiprocessor: no second wave needs the occupancy that a deeper step's workgroup
/// memory costs, and every step pays its barrier and latency once) and the space has
/// that twin. Measured on an H200 through Vulkan (2026-11-28d,
/// `conv-vk-all.json`, 32×64 tiles of 1×2-fragment warps, unsplit, at the seven of
/// ResNet-50's layers giving 16 to 98 blocks): steps of 64 against 16 at 0.89–1.26× the
/// time's inverse, 1.10× geometric mean (56² 3×3 20.2 → 16.5 µs, 7² 3×3 157 → 124; 28²
/// stride 2 45.1 → 50.9 the one loss); at the stem's 392 blocks 14.5 → 34.0 µs, so not
/// past one wave. Its reduction splits into parts of at least `min_part` (0: none; the
/// rule's is [`VIEWS_MIN_PART`], [`super::vk_split`] sets another).
pub fn views_rule_elementwise_with(
    configs: &[Config],
    p: rule::Product,
    deep: bool,
    min_part: i64,
) -> Option<rule::Choice> {
    use crate::ceil_div;
    if let Some(choice) = views_many_waves(configs, p) {
        return Some(choice);
    }
    let step = if p.k < VIEWS_SHORT_K { 16 } else { 32 };
    let tiles: Vec<F16Params> = configs
        .iter()
        .filter_map(|c| F16Params::from_config(c).ok())
        .filter(|t| {
            t.mma == 16
                && t.frags == [1, 2]
                && t.bk == step
                && t.prefetch == 2
                && t.frag_buffers == 1
                && t.warpgroups == 0
                && !t.async_copy
                && !t.coop_copy
        })
        .collect();
    let whole = |t: &F16Params| ceil_div(p.m, t.block_m()) * ceil_div(p.n, t.block_n()) * p.batch;
    let splits = |t: &F16Params| {
        let tiles = whole(t);
        if !p.split || min_part == 0 || tiles >= rule::ENOUGH_TILES / 2 {
            return 1;
        }
        let wanted = ceil_div(rule::ENOUGH_TILES, tiles)
            .min(p.k / min_part)
            .min(VIEWS_MAX_SPLITS);
        // The largest of the space's split factors (powers of two) at most `wanted`.
        rule::SPLIT_FACTORS
            .into_iter()
            .filter(|&s| s <= wanted)
            .max()
            .unwrap_or(1)
    };
    let blocks = |t: &F16Params| whole(t) * splits(t);
    let area = |t: &F16Params| t.block_m() * t.block_n();
    let useful = |t: &F16Params| t.block_m().min(p.m) * t.block_n().min(p.n);
    let enough = tiles
        .iter()
        .filter(|t| 4 * blocks(t) >= 3 * rule::ENOUGH_TILES)
        .max_by_key(|t| (useful(t), -area(t), t.threads(), -splits(t), -t.block_m()));
    let chosen = enough.or_else(|| {
        tiles
            .iter()
            .max_by_key(|t| (blocks(t), -area(t), t.threads()))
    })?;
    let why = format!(
        "views on 16x16 matrices stored element by element: {}x{} tiles of 1x2-fragment \
         warps, k steps of {step}, {} blocks",
        chosen.block_m(),
        chosen.block_n(),
        blocks(chosen)
    );
    let deeper = F16Params {
        bk: DEEP_STEP,
        k_unroll: DEEP_STEP,
        ..*chosen
    };
    if deep
        && splits(chosen) == 1
        && blocks(chosen) <= rule::ENOUGH_TILES
        && chosen.bk < DEEP_STEP
        && p.k > chosen.bk
        && configs.contains(&deeper.config())
    {
        let why =
            format!("{why}; k steps of {DEEP_STEP} ({DEEP_STEPS_SWITCH}=2: one wave, unsplit)");
        return Some((deeper.config(), 1, why));
    }
    Some((chosen.config(), splits(chosen), why))
}

/// Over views, the tile of four warps with k steps of 16 where a product at least
/// [`VIEWS_SHORT_K`] long has at least [`rule::ENOUGH_TILES`] blocks of 64×64: warps of
/// 2×2 fragments (64×64 tiles) from twice that, else of 1×2 (32×64) where the product is
/// at most 64 wide. The 1×2-fragment rule below was fitted at one wave,
/// when every gathered load cost a chain of signed divisions; with the WGSL emitter's
/// unsigned divisions (`weft_codegen_wgsl`'s `index` module) the many-wave batch-8
/// convolutions want fewer, busier warps. Measured on an H200 through Vulkan
/// (2026-12-01, `measurements/h200-2026-12-01c/call6`, 36 configs each, `--trials`):
/// Inception-v3's 3×3s at 147² and 73² 91.1 → 72.4 and 169.2 → 117.5 µs, ResNet-50's
/// 56² 3×3 at batch 8 29.8 → 20.6, Inception's 5×5 at 35² (154 blocks) 37.4 → 23.6; but
/// ResNet-50's 28² 3×3 at batch 8 (128 wide, 196 blocks) 26.6 → 27.3 in 32×64 tiles (call
/// 7), and that model 1.322 → 1.334 ms with the tiles at every such product, its short
/// 7×7 stem among them (147 long, untimed alone; the 1×2 rule's k steps of 16 there were
/// fitted at it): hence the width and length bounds. With them, at batch 8 on Vulkan
/// (call 7, the tiles without the bounds): Inception-v3 2.752 → 2.654 ms, GoogLeNet 994
/// → 964 µs, DenseNet-121 2.363 → 2.212 ms.
fn views_many_waves(configs: &[Config], p: rule::Product) -> Option<rule::Choice> {
    use crate::ceil_div;
    let blocks = ceil_div(p.m, 64) * ceil_div(p.n, 64) * p.batch;
    if blocks < rule::ENOUGH_TILES || p.k < VIEWS_SHORT_K {
        return None;
    }
    let frags = if blocks >= 2 * rule::ENOUGH_TILES {
        [2, 2]
    } else if p.n <= 64 {
        [1, 2]
    } else {
        return None;
    };
    let tile = configs
        .iter()
        .filter_map(|c| F16Params::from_config(c).ok())
        .find(|t| {
            t.mma == 16
                && t.warps == [2, 2]
                && t.frags == frags
                && t.bk == 16
                && t.prefetch == if runs_ahead(t) { 2 } else { 1 }
                && t.frag_buffers == 1
                && t.warpgroups == 0
                && !t.async_copy
                && !t.coop_copy
        })?;
    let n = ceil_div(p.m, tile.block_m()) * ceil_div(p.n, tile.block_n()) * p.batch;
    let why = format!(
        "views on 16x16 matrices stored element by element, {blocks} blocks of 64x64 (at \
         least {}): {}x{} tiles of 4 warps of {}x{} fragments, k steps of 16, {n} blocks",
        rule::ENOUGH_TILES,
        tile.block_m(),
        tile.block_n(),
        frags[0],
        frags[1]
    );
    Some((tile.config(), 1, why))
}

/// Whether the rule's tile `q`, on a target storing tiles element by element, loads two
/// k steps ahead (`pf` = 2): where a warp multiplies at most two accumulator fragments a
/// k sub-step, too little work to hide a k step's wait on its global loads. Measured on
/// an H200 through Vulkan (2026-11-28b, `measurements/h100-2026-11-28b/ahead`, every
/// config of the space with and without): the rule's tiles of one by two fragments at
/// BERT's and GPT-2's batch-1 products ran 8–11% faster (128 × 768 × 768 and 1024³ 1%),
/// and both models 10% faster end to end; its tiles of 8 to 16 fragments at the
/// 1024-row products ran 0.6–7% slower, and at 4096³ 10% slower.
pub fn runs_ahead(q: &F16Params) -> bool {
    q.mma > 0 && q.frags[0] * q.frags[1] <= 2
}

/// Whether the rule's tile `q`, on a target storing tiles element by element, keeps two
/// sets of fragments (`fb` = 2): where its k step is one sub-step (`bk` = `mma`, the
/// large tiles that fit 48 KiB of workgroup memory only so), the next tile's fragments
/// then load after the barrier while this tile's multiply, instead of every warp
/// waiting on its shared-memory loads after it. Measured on an H200 through Vulkan
/// (2026-11-28c, `measurements/h100-2026-11-28c`): the rule's 128×256×16 tile at
/// 1024 × 3072 × 768 ran 34.1 → 32.6 µs, its 128×128×16 tile at 512 × 2304 × 768 23.6 →
/// 22.3, 4096³ unchanged (637.9 → 637.1); BERT-base and GPT-2 at 512 tokens 6% faster
/// end to end, at batch 8 2%. With two sets on every pick (`bk` 32 and 64 too) the
/// models ran no faster than with this.
pub fn pipelines_fragments(q: &F16Params) -> bool {
    q.mma > 0 && q.bk == q.mma && q.frag_buffers == 1
}

/// The most threads a block of the rule's mma.sync tiles has: the 16-warp tiles (256×256
/// and the like) ran 10–30× slower than 8-warp ones where the rule took them on an H100
/// (3001³: 9.07 ms against 0.335 ms; 4095×4097×63: 470 against 33 µs; `weft sweep`,
/// 2026-11-25, `measurements/h100-2026-11-25b/f16-*.json`): their accumulators do
/// not fit 64K registers at 512 threads. The tuner still times them.
pub const MAX_RULE_THREADS: i64 = 256;

/// The most threads a block of the rule's tiles has where they are stored element by
/// element (WGSL, MSL): 16 warps of 1×2 or 2×2 fragments (the space holds no larger
/// ones there) were the fastest config at 3 of the 24 Vulkan shapes of 2026-11-27, and
/// the fitted model weighs them.
pub const MAX_RULE_THREADS_ELEMENTWISE: i64 = 512;

/// The stages of the wgmma tiles the rule weighs: with 5 the same tiles ran up to 2.3×
/// slower on an H100 (1024×768×768, 64×128 tiles: 12.7 against 5.5 µs; 768³: 8.5
/// against 5.4; `measurements/h100-2026-11-25c`, `-25e`), which the model does
/// not describe. 3 stages were never faster while the staging tile had bytes of its
/// own; laid over the stages (2026-11-27) a 128×128 tile in 3 stages fits two blocks a
/// multiprocessor, and ran GPT-2's batch-8 products 4–10% faster than in 4
/// (`docs/wgmma-epilogue.md`).
pub const WGMMA_RULE_STAGES: [i64; 2] = [3, 4];

/// The fewest rows of a product the rule weighs wgmma tiles for: a wgmma tile computes
/// 64, and below 32 the model misjudges its split configs. With the stages' residency
/// of 2026-11-27 it took them at m = 1 and m = 8, 0.72× and 0.65× of the tuned best on
/// an H100 (8×4096×4096: 18.0 against 11.5 µs for the mma.sync split it took before;
/// `measurements/h100-2026-11-27/f16-mixed.txt`).
pub const WGMMA_RULE_MIN_ROWS: i64 = 32;

/// The fewest 64×64 tiles of a product over views (an implicit GEMM) at which the rule
/// weighs the wgmma tiles that gather their operands with the threads
/// (`hopper_views`), and then unsplit. Measured on an H100 (2026-11-27h,
/// `measurements/h100-2026-11-27h/`): timed alone against the mma.sync space at
/// ResNet-50's convolutions, the best wgmma tile ran 1.13–1.34× faster at the batch-8
/// layers of 196 to 1568 such tiles but 0.4–0.96× at batch 1's layers of fewer, whose
/// four-warp blocks (three or four a multiprocessor) hide the gathers' latency worse
/// than the mma.sync tiles' six or seven; split, they won only at batch 8's deepest
/// layers (1.04–1.12×). The cost model, fitted on TMA-fed tiles, takes them at batch 1
/// too (12 of 23 layers, 0.67–0.79× of the best there). In whole models a gate at 196
/// tiles (the op figure's best: 28 of 31 layers within 0.8× of the best timed) ran
/// ResNet-50 batch 8 and Inception v3 2.5–2.7% slower although the kernels timed alone
/// summed 4% faster (the 7² and 14² 1×1 convolutions with the residual add fused, and
/// Inception's 147² and 71² convolutions of 32 and 80 channels, ran slower in place);
/// at 400, ResNet-50 batch 8 ran 1% faster and Inception v3 the same
/// (2026-11-27h call `run5`, `gate.txt`).
pub const WGMMA_VIEWS_MIN_TILES: i64 = 400;

/// The largest wgmma block tile (elements) the rule weighs: 128×256 and 256×128 (two
/// warpgroups, which fit only since the staging tile lies over the stages) ran GPT-2's
/// products 5–125% slower than 128×128 on an H100 (2026-11-27,
/// `measurements/h100-2026-11-27/ab.txt`), while the model, fitted before they
/// fitted, ranks them first. The tuner still times them.
pub const WGMMA_RULE_MAX_TILE: i64 = 128 * 128;

/// The configs of `configs` that `keep` accepts, with their block tiles and what their
/// warps do ([`rule::tensor::MatrixTile`]): what the stated rule and a whole-model tuning
/// run choose among.
pub fn tiles(
    limits: &TargetLimits,
    configs: &[Config],
    keep: impl Fn(&F16Params) -> bool,
) -> Vec<rule::Tile> {
    let elementwise = space::elementwise_matrix_copies(limits);
    configs
        .iter()
        .filter_map(|c| F16Params::from_config(c).ok())
        .filter(keep)
        .map(|t| rule::Tile {
            block_m: t.block_m(),
            block_n: t.block_n(),
            threads: t.threads(),
            bk: t.bk,
            pref: 0,
            per_thread: None,
            matrix: (t.mma > 0).then(|| rule::tensor::MatrixTile {
                frags: t.frags,
                frag_buffers: t.frag_buffers,
                warpgroup: t.warpgroups > 0,
                in_flight: if t.async_copy || t.warpgroups > 0 {
                    t.stages - 1
                } else {
                    1
                },
                shared_bytes: t.shared_bytes(),
                accumulators: t.accumulators(),
                // The split forms: mma.sync tiles with k steps of 32 and one set of
                // fragments; every wgmma tile (its parts are k ranges of the TMA ring).
                splits: t.warpgroups > 0 || (t.bk == 32 && t.frag_buffers == 1 && !t.coop_copy),
                elementwise,
            }),
            config: t.config(),
        })
        .collect()
}

/// The config of [`super::build`] with no tuning record, and why: the rule over the
/// `m × n × k` product, split (as `sk`) where the model finds the tiles few and the
/// reduction long.
pub fn op_rule(limits: &TargetLimits, m: i64, n: i64, k: i64) -> (Config, String) {
    let (config, splits, why) = rule_config(limits, rule::Product::split(m, n, k), false);
    let why = if config.get("wg").unwrap_or(0) > 0 {
        format!("{why}; wgmma + TMA (sm_90a)")
    } else {
        why
    };
    rule::for_op((config, splits, why))
}
