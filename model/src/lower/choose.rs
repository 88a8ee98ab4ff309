//! The stated rule that picks an anchor's template config when there is no tuning
//! record: from the template's hardware-centric space (what the target's limits allow),
//! the largest block tile (counting only its part inside the product) that still gives
//! the GPU [`ENOUGH_TILES`] blocks of work,
//! counting the parts a long reduction is split into ([`split_k`]) — so that a 112²
//! layer gets 128×128 tiles, and a 7² one 64×64 tiles with its 4608-long reduction in 16
//! parts rather than tiny tiles that each walk it alone — else, where no tile gives that
//! many, the one that gives the most, and of those the smallest (least work wasted past
//! the edges); remaining ties go to more threads, fewer parts, then the shorter k step.

use weft_codegen_common::TargetLimits;
use weft_ops::templates::Config;
use weft_ops::templates::matmul::{self, MatmulParams};
use weft_ops::templates::matmul_f16::{self, F16Params};

pub(crate) use crate::anchor::MAX_SPLITS;
use crate::anchor::{AnchorChoice, AnchorKey, AnchorTemplate, Choices};

/// Blocks that fill today's large GPUs about once (an H100 has 132 multiprocessors).
pub(crate) const ENOUGH_TILES: i64 = 128;

/// The config and split parts for anchor `key`: the tuning run's choice where `choices`
/// holds one, else the stated rule's; with why.
pub(crate) fn anchor(
    limits: &TargetLimits,
    choices: &Choices,
    key: &AnchorKey,
) -> (AnchorChoice, String) {
    match choices.get(key) {
        // A record naming Winograd for an anchor that cannot take it (edited by hand, or
        // made by another version) is not followed.
        Some((c, why)) if !c.winograd || key.winograd.is_some() => (c.clone(), why.clone()),
        _ => by_rule(limits, key),
    }
}

/// The stated rule's choice for anchor `key`, with why: the whole product on the
/// anchor's template (never Winograd: only a tuning record chooses it), its tile and
/// split parts by [`pick`].
pub(crate) fn by_rule(limits: &TargetLimits, key: &AnchorKey) -> (AnchorChoice, String) {
    let (config, splits, why) = match key.template {
        AnchorTemplate::Matmul => matmul_config(limits, key.m, key.n, key.k),
        AnchorTemplate::MatmulF16 => matmul_f16_config(limits, key.m, key.n, key.k),
    };
    (AnchorChoice::gemm(config, splits), why)
}

/// A candidate block tile of either matmul template, as the rule sees it.
struct Tile {
    block_m: i64,
    block_n: i64,
    threads: i64,
    bk: i64,
    config: Config,
}

/// The rule over `candidates` for an `m × n × k` product: the chosen config, its split
/// parts and why; `None` for an empty space.
fn pick(candidates: &[Tile], m: i64, n: i64, k: i64) -> Option<(Config, i64, String)> {
    let tiles = |p: &Tile| ceil_div(m, p.block_m) * ceil_div(n, p.block_n);
    let splits = |p: &Tile| split_k(m, n, k, p.block_m, p.block_n);
    let blocks = |p: &Tile| tiles(p) * splits(p);
    let area = |p: &Tile| p.block_m * p.block_n;
    // The part of a tile inside the product: a 512-row tile over 49 rows is mostly waste.
    let useful = |p: &Tile| p.block_m.min(m) * p.block_n.min(n);
    let enough = candidates
        .iter()
        .filter(|p| blocks(p) >= ENOUGH_TILES)
        .max_by_key(|p| (useful(p), -area(p), p.threads, -splits(p), -p.bk));
    let chosen = enough.or_else(|| {
        candidates
            .iter()
            .max_by_key(|p| (blocks(p), -area(p), p.threads, -p.bk))
    })?;
    let why = if blocks(chosen) >= ENOUGH_TILES {
        format!(
            "largest tile with ≥ {ENOUGH_TILES} blocks: {} blocks",
            blocks(chosen)
        )
    } else {
        format!("most blocks any tile gives: {}", blocks(chosen))
    };
    Some((chosen.config.clone(), splits(chosen), why))
}

/// The matmul template's config for an `m × n × k` product on `limits`, with the number
/// of parts its reduction is split into ([`split_k`]) and why.
pub(crate) fn matmul_config(
    limits: &TargetLimits,
    m: i64,
    n: i64,
    k: i64,
) -> (Config, i64, String) {
    let candidates: Vec<Tile> = matmul::space(limits)
        .iter()
        .filter_map(|c| MatmulParams::from_config(c).ok())
        .filter(|p| p.min_blocks == 0)
        .map(|p| Tile {
            block_m: p.block_m(),
            block_n: p.block_n(),
            threads: p.threads(),
            bk: p.bk,
            config: p.config(),
        })
        .collect();
    pick(&candidates, m, n, k).unwrap_or_else(|| {
        (
            matmul::default_config(limits),
            1,
            "the template's default".into(),
        )
    })
}

/// The fp16 matmul template's config for an `m × n × k` product over views (an implicit
/// GEMM's im2col), by the same rule over `matmul_f16::space_over_views`, with its split
/// parts. Only the plain variant of each tile competes (one set of fragments, copies
/// staged through registers, as the template's default): the pipelined ones are for the
/// tuner, which measures them.
pub(crate) fn matmul_f16_config(
    limits: &TargetLimits,
    m: i64,
    n: i64,
    k: i64,
) -> (Config, i64, String) {
    let candidates: Vec<Tile> = matmul_f16::space_over_views(limits)
        .iter()
        .filter_map(|c| F16Params::from_config(c).ok())
        .filter(|p| p.frag_buffers == 1 && !p.async_copy)
        .map(|p| Tile {
            block_m: p.block_m(),
            block_n: p.block_n(),
            threads: p.threads(),
            bk: p.bk,
            config: p.config(),
        })
        .collect();
    pick(&candidates, m, n, k).unwrap_or_else(|| {
        (
            matmul_f16::default_config(limits),
            1,
            "the template's default".into(),
        )
    })
}

/// How many parts to split the reduction of an `m × n × k` product into, with
/// `block_m × block_n` tiles: 1 where the tiles alone give half of [`ENOUGH_TILES`]
/// blocks or the reduction is short; else enough parts to reach that many blocks, each
/// part at least [`MIN_SPLIT_K`] long, at most [`MAX_SPLITS`].
pub(crate) fn split_k(m: i64, n: i64, k: i64, block_m: i64, block_n: i64) -> i64 {
    let tiles = ceil_div(m, block_m) * ceil_div(n, block_n);
    // Half a wave of whole tiles is better served by a smaller tile than by writing and
    // summing partial products.
    if tiles >= ENOUGH_TILES / 2 {
        return 1;
    }
    let wanted = ceil_div(ENOUGH_TILES, tiles);
    wanted.min(k / MIN_SPLIT_K).clamp(1, MAX_SPLITS)
}

/// The shortest reduction one split part walks: below it the partials cost more to
/// write and sum than the parallelism gains.
pub(crate) const MIN_SPLIT_K: i64 = 256;

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_tiles_and_long_sums_split() {
        let cuda = TargetLimits::cuda();
        // ResNet-50's 7×7 3×3 layer: 49 × 512 × 4608.
        let (c, s, _) = matmul_config(&cuda, 49, 512, 4608);
        let p = MatmulParams::from_config(&c).unwrap();
        assert_eq!(s, split_k(49, 512, 4608, p.block_m(), p.block_n()));
        // Splitting lets a larger tile fill the GPU than the unsplit rule would take.
        assert!(p.block_m() * p.block_n() >= 64 * 64, "{c}");
        assert!(p.threads() >= 128, "{c}");
        assert!(s > 1 && s <= MAX_SPLITS, "{s}");
        assert!(4608 / s >= MIN_SPLIT_K);
        // A 112² layer has tiles enough; a short sum is not split.
        let (c, _, _) = matmul_config(&cuda, 112 * 112, 64, 576);
        let p = MatmulParams::from_config(&c).unwrap();
        assert_eq!(split_k(112 * 112, 64, 576, p.block_m(), p.block_n()), 1);
        assert_eq!(split_k(49, 64, 300, p.block_m(), p.block_n()), 1);
    }

    #[test]
    fn big_layers_get_big_tiles_and_small_ones_many_blocks() {
        let cuda = TargetLimits::cuda();
        let (big, _, _) = matmul_config(&cuda, 112 * 112, 128, 576);
        let big = MatmulParams::from_config(&big).unwrap();
        let (small, _, why) = matmul_config(&cuda, 49, 512, 64);
        let small = MatmulParams::from_config(&small).unwrap();
        assert!(big.block_m() * big.block_n() > small.block_m() * small.block_n());
        assert!(ceil_div(112 * 112, big.block_m()) * ceil_div(128, big.block_n()) >= ENOUGH_TILES);
        assert!(why.contains("blocks"), "{why}");
        // Every choice is a point of the space the target runs.
        let webgpu = TargetLimits::webgpu_default();
        let (c, _, _) = matmul_config(&webgpu, 49, 512, 4608);
        assert!(matmul::space(&webgpu).contains(&c));
    }

    #[test]
    fn fp16_tiles_follow_the_same_rule() {
        for limits in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
            let (big, _, _) = matmul_f16_config(&limits, 112 * 112, 128, 576);
            let big = F16Params::from_config(&big).unwrap();
            let (small, splits, _) = matmul_f16_config(&limits, 49, 512, 4608);
            assert!(matmul_f16::space_over_views(&limits).contains(&small));
            let small = F16Params::from_config(&small).unwrap();
            assert!(big.block_m() * big.block_n() >= small.block_m() * small.block_n());
            // The 7² layer's long reduction is split, each part at least MIN_SPLIT_K.
            assert!(splits > 1 && 4608 / splits >= MIN_SPLIT_K, "{splits}");
        }
        // CUDA's tensor cores: a 16×16 matrix-unit tile.
        let (c, _, _) = matmul_f16_config(&TargetLimits::cuda(), 3136, 64, 576);
        assert_eq!(F16Params::from_config(&c).unwrap().mma, 16);
    }
}
