//! The stated rule that picks a matmul template's config from the hardware and the
//! shape when there is no tuning record (the Hidet paper's point, §4.3: a
//! hardware-centric space is small and input-independent, so the choice within it can
//! follow the input size by rule):
//!
//! from the template's space (what the target's limits allow), the largest block tile
//! (counting only its part inside the product) that still gives the GPU
//! [`ENOUGH_TILES`] blocks of work, counting the parts a long reduction is split into
//! where the caller can split ([`split_k`]) and the batch of products one launch holds
//! — so that a 112² layer gets 128×128 tiles, and a 7² one 64×64 tiles with its
//! 4608-long reduction in 16 parts rather than tiny tiles that each walk it alone —
//! else, where no tile gives that many, the one that gives the most, and of those the
//! smallest (least work wasted past the edges); remaining ties go to more threads, the
//! template's preference ([`Tile::pref`]), fewer parts, then the shorter k step.
//!
//! The whole-model compiler picks every anchor by it, and the ops' templates pick their
//! config by it when there is no record (both with split-K, [`super::split_k`]). Each
//! template offers its tiles (`matmul::rule_config`, `matmul_f16::rule_config`); this
//! module knows no template.

use weft_codegen_common::TargetLimits;

use super::{Config, ceil_div};
use crate::Shape;

/// Blocks that fill today's large GPUs about once (an H100 has 132 multiprocessors).
pub const ENOUGH_TILES: i64 = 128;

/// The most parts a reduction is split into: the partials are `splits · m · n` floats
/// written and read once.
pub const MAX_SPLITS: i64 = 16;

/// The shortest reduction one split part walks: below it the partials cost more to
/// write and sum than the parallelism gains.
pub const MIN_SPLIT_K: i64 = 256;

/// A product the rule picks a tile for: `batch` products of `m × n × k` in one launch
/// (one grid layer each), split into parts where `split` allows.
#[derive(Clone, Copy, Debug)]
pub struct Product {
    pub m: i64,
    pub n: i64,
    pub k: i64,
    pub batch: i64,
    pub split: bool,
}

impl Product {
    /// One `m × n × k` product that may be split.
    pub fn split(m: i64, n: i64, k: i64) -> Product {
        Product {
            m,
            n,
            k,
            batch: 1,
            split: true,
        }
    }

    /// `batch` `m × n × k` products in one launch, never split.
    pub fn whole(m: i64, n: i64, k: i64, batch: i64) -> Product {
        Product {
            m,
            n,
            k,
            batch,
            split: false,
        }
    }
}

/// The rule's choice: the config, the parts the reduction is split into, and why.
pub type Choice = (Config, i64, String);

/// A candidate block tile of a matmul template, as the rule sees it.
#[derive(Clone, Debug)]
pub struct Tile {
    pub block_m: i64,
    pub block_n: i64,
    pub threads: i64,
    pub bk: i64,
    /// The template's preference among tiles of the same size and threads (higher
    /// first): what its measurements favour, such as longer k steps.
    pub pref: i64,
    pub config: Config,
}

/// The rule over `candidates` for product `p`; `None` for an empty space.
pub fn pick(candidates: &[Tile], p: Product) -> Option<Choice> {
    let Product { m, n, k, batch, .. } = p;
    let tiles = |t: &Tile| ceil_div(m, t.block_m) * ceil_div(n, t.block_n) * batch;
    let splits = |t: &Tile| {
        if p.split {
            split_k(m, n, k, t.block_m, t.block_n)
        } else {
            1
        }
    };
    let blocks = |t: &Tile| tiles(t) * splits(t);
    let area = |t: &Tile| t.block_m * t.block_n;
    // The part of a tile inside the product: a 512-row tile over 49 rows is mostly waste.
    let useful = |t: &Tile| t.block_m.min(m) * t.block_n.min(n);
    let enough = candidates
        .iter()
        .filter(|t| blocks(t) >= ENOUGH_TILES)
        .max_by_key(|t| (useful(t), -area(t), t.threads, t.pref, -splits(t), -t.bk));
    let chosen = enough.or_else(|| {
        candidates
            .iter()
            .max_by_key(|t| (blocks(t), -area(t), t.threads, t.pref, -t.bk))
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

/// The rule for an op's template: its config for the op's `shape` on `limits` (its split
/// as the `sk` parameter, [`super::split_k`]), and why.
pub type OpRule = fn(&TargetLimits, &Shape) -> (Config, String);

/// [`pick`], or `fallback` (the template's default, not split) for an empty space.
pub fn pick_or(candidates: &[Tile], p: Product, fallback: impl FnOnce() -> Config) -> Choice {
    pick(candidates, p).unwrap_or_else(|| (fallback(), 1, "the template's default".into()))
}

/// A rule's choice as an op's template takes it: the split as `sk`.
pub fn for_op((config, splits, why): Choice) -> (Config, String) {
    let why = match splits {
        1 => format!("rule: {why}"),
        s => format!("rule: {why}, k split in {s} parts"),
    };
    let mut config = config;
    if splits > 1 {
        // `split_k::PARAM`'s name (this module is below `split_k`, which uses its
        // constants).
        config.0.push(("sk".to_string(), splits));
    }
    (config, why)
}

/// How many parts to split the reduction of an `m × n × k` product into, with
/// `block_m × block_n` tiles: 1 where the tiles alone give half of [`ENOUGH_TILES`]
/// blocks or the reduction is short; else enough parts to reach that many blocks, each
/// part at least [`MIN_SPLIT_K`] long, at most [`MAX_SPLITS`].
pub fn split_k(m: i64, n: i64, k: i64, block_m: i64, block_n: i64) -> i64 {
    let tiles = ceil_div(m, block_m) * ceil_div(n, block_n);
    // Half a wave of whole tiles is better served by a smaller tile than by writing and
    // summing partial products.
    if tiles >= ENOUGH_TILES / 2 {
        return 1;
    }
    let wanted = ceil_div(ENOUGH_TILES, tiles);
    wanted.min(k / MIN_SPLIT_K).clamp(1, MAX_SPLITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Square tiles of 32, 64 and 128 with 128 threads.
    fn tiles() -> Vec<Tile> {
        [32, 64, 128]
            .into_iter()
            .map(|b| Tile {
                block_m: b,
                block_n: b,
                threads: 128,
                bk: 16,
                pref: 0,
                config: Config(vec![("b".into(), b)]),
            })
            .collect()
    }

    fn side((c, _, _): &Choice) -> i64 {
        c.0[0].1
    }

    #[test]
    fn the_largest_tile_that_fills_the_gpu() {
        // 2048²: 128-tiles give 256 blocks.
        assert_eq!(
            side(&pick(&tiles(), Product::whole(2048, 2048, 64, 1)).unwrap()),
            128
        );
        // 512²: only 32-tiles give 256 ≥ 128 blocks (64-tiles give 64).
        assert_eq!(
            side(&pick(&tiles(), Product::whole(512, 512, 64, 1)).unwrap()),
            32
        );
        // A batch of 16 products counts its grid layers: 128-tiles then give 256.
        assert_eq!(
            side(&pick(&tiles(), Product::whole(512, 512, 64, 16)).unwrap()),
            128
        );
        // Nothing fills it: the most blocks, the smallest tile.
        let (_, s, why) = pick(&tiles(), Product::whole(64, 64, 64, 1)).unwrap();
        assert_eq!((s, why.contains("most blocks")), (1, true));
        assert!(pick(&[], Product::whole(64, 64, 64, 1)).is_none());
    }

    #[test]
    fn long_reductions_over_few_tiles_split_where_allowed() {
        // 49 × 512 × 4608 (ResNet-50's 7² 3×3 layer).
        let (c, s, _) = pick(&tiles(), Product::split(49, 512, 4608)).unwrap();
        let b = c.0[0].1;
        assert_eq!(s, split_k(49, 512, 4608, b, b));
        assert!(s > 1 && s <= MAX_SPLITS && 4608 / s >= MIN_SPLIT_K, "{s}");
        // Splitting lets a larger tile fill the GPU than the whole product takes.
        let (w, ws, _) = pick(&tiles(), Product::whole(49, 512, 4608, 1)).unwrap();
        assert_eq!(ws, 1);
        assert!(b >= w.0[0].1);
        // Tiles enough, or a short sum: no split.
        assert_eq!(split_k(112 * 112, 64, 576, 64, 64), 1);
        assert_eq!(split_k(49, 64, 300, 64, 64), 1);
    }
}
