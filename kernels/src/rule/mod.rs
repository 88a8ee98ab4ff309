//! The stated rule that picks a matmul template's config from the hardware and the
//! shape when there is no tuning record (the Hidet paper's point, §4.3: a
//! hardware-centric space is small and input-independent, so the choice within it can
//! follow the input size by rule).
//!
//! Where the template describes what each thread of a tile computes (the CUDA-core
//! tiles of the fp32 matmul, implicit-GEMM and Winograd templates), the rule takes the
//! tile and split-K factor a small analytic model ([`model`]) estimates fastest: waves
//! of blocks over the device's multiprocessors, the blocks each holds at once (threads,
//! registers), the instructions a k step issues, the operand traffic, and what a split
//! adds. The model's constants were fitted on an H100 and are stated there.
//!
//! Tensor-core tiles (the fp16 matmul template's mma.sync and wgmma tiles) are ranked
//! the same way by a model of what they do ([`tensor`]): waves, residency by threads,
//! registers and shared memory, the multiplies and fragment loads of a k step, the
//! operand traffic, the pipeline's latency, and what a split adds; its constants were
//! fitted on an H100 too, once for CUDA's 16-byte copies and once for the tiles WGSL and
//! MSL store element by element (on Vulkan).
//!
//! Elsewhere (tiles neither model describes: CUDA-core configs of the fp16 template, and
//! its matrix-unit tiles over views on WGSL and MSL) it
//! takes, from the template's space, the largest block tile (counting only its part
//! inside the product) that still gives the GPU [`ENOUGH_TILES`] blocks of work,
//! counting the parts a long reduction is split into where the caller can split
//! ([`split_k`]) and the batch of products one launch holds, else, where no tile gives
//! that many, the one that gives the most, and of those the smallest (least work wasted
//! past the edges); remaining ties go to more threads, the template's preference
//! ([`Tile::pref`]), fewer parts, then the shorter k step.
//!
//! The whole-model compiler picks every anchor by it, and the ops' templates pick their
//! config by it when there is no record (both with split-K, [`super::split_k`]). Each
//! template offers its tiles (`matmul::rule_config`, `matmul_f16::rule_config`); this
//! module knows no template.

pub mod model;
pub mod tensor;

use super::{Config, ceil_div};

/// Blocks that fill today's large GPUs about once (an H100 has 132 multiprocessors).
pub const ENOUGH_TILES: i64 = 128;

/// The most parts a reduction is split into: the partials are `splits · m · n` floats
/// written and read once. 64 since 2026-11-27: with 16 a 64×64×32768 product ran on 16
/// blocks of an H100's 132 (71.5 µs, cuBLAS 19.3; `docs/matmul-template.md`).
pub const MAX_SPLITS: i64 = 64;

/// The most parts the block-count rule ([`split_k`]) splits into: the tiles it serves
/// (no cost model describes them) kept their splits of before the deeper ones.
pub const BLOCK_COUNT_MAX_SPLITS: i64 = 16;

/// The shortest reduction one split part walks: below it the partials cost more to
/// write and sum than the parallelism gains.
pub const MIN_SPLIT_K: i64 = 256;

/// The smallest block tile (rows × columns) the cost model weighs split: half the area
/// the spaces offer split ([`super::split_k::MIN_SPLIT_AREA`], which keeps tuning
/// short), so that a product of 16 rows can take a 16×128 tile in parts (measured on an
/// H100 at 16×1024×4096: 14.4 µs against 30.0 for the best 32-row tile).
pub const MIN_SPLIT_AREA: i64 = 32 * 64;

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
    /// Outputs each thread accumulates, for the CUDA-core cost model ([`model`]).
    pub per_thread: Option<model::ThreadTile>,
    /// What a tensor-core tile's warps do, for the tensor-core cost model ([`tensor`]).
    /// A tile with neither this nor `per_thread` is picked by the block-count rule.
    pub matrix: Option<tensor::MatrixTile>,
    pub config: Config,
}

/// The rule over `candidates` for product `p` on a GPU of `multiprocessors`: a cost
/// model's fastest tile and split where every candidate describes its work (its
/// threads', [`model`], or its warps' matrix fragments, [`tensor`]), else the
/// block-count rule; `None` for an empty space.
pub fn pick(candidates: &[Tile], p: Product, multiprocessors: u64) -> Option<Choice> {
    pick_with(candidates, p, multiprocessors, &model::H100)
}

/// [`pick`] with `constants` for the CUDA-core model (a fit's candidates; the
/// tensor-core model and the block-count rule take none).
pub fn pick_with(
    candidates: &[Tile],
    p: Product,
    multiprocessors: u64,
    constants: &model::Constants,
) -> Option<Choice> {
    let mps = multiprocessors as i64;
    if candidates.is_empty() {
        return None;
    }
    if candidates.iter().all(|t| t.per_thread.is_some()) {
        // A tile whose registers are capped for more blocks is weighed whole: its splits
        // were the slower (`matmul::THIRD_ROWS_MIN_K`).
        let splittable = |t: &Tile| match t.per_thread {
            Some(w) if w.min_blocks > 0 => 0,
            _ => t.block_m * t.block_n,
        };
        return fastest(candidates, p, mps, splittable, |t, s| {
            let work = t.per_thread.expect("checked above");
            (
                model::estimate_with(constants, t, work, p, s, mps),
                work.rows,
            )
        });
    }
    if candidates.iter().all(|t| t.matrix.is_some()) {
        // Only the tiles the template splits weigh splits.
        let splittable = |t: &Tile| {
            if t.matrix.is_some_and(|w| w.splits) {
                t.block_m * t.block_n
            } else {
                0
            }
        };
        // At equal cycles, the deeper ring of stages: the model prices the memory
        // latency only where it bounds a step, so a tie hides what more tiles in flight
        // save. On an H100 the same wgmma tile ran 4–10% faster in 4 stages than in 3
        // where both fit as many blocks (512×3072×768: 6.29 against 6.93 µs,
        // 512×768×3072 split in 2: 9.92 against 10.33; 1024³: 6.69 against 6.94;
        // `docs/rule-f16.md`); where 3 stages fit more blocks the cycles differ.
        return fastest(candidates, p, mps, splittable, |t, s| {
            let work = t.matrix.expect("checked above");
            (tensor::estimate(t, work, p, s, mps), -work.in_flight)
        });
    }
    by_blocks(candidates, p)
}

/// The split factors the rule weighs for `t` over `p`: none where the caller cannot
/// split; else [`SPLIT_FACTORS`] that can pay there ([`split_pays`]), on tiles of at
/// least [`MIN_SPLIT_AREA`] (as `split_area` counts it: a template's tile that never
/// splits counts none).
fn split_factors(t: &Tile, p: Product, split_area: impl Fn(&Tile) -> i64) -> Vec<i64> {
    let mut factors = vec![1];
    if p.split && split_area(t) >= MIN_SPLIT_AREA {
        factors.extend(
            SPLIT_FACTORS
                .iter()
                .copied()
                .filter(|&s| split_pays(p.m, p.n, p.k, (t.block_m, t.block_n), s)),
        );
    }
    factors
}

/// The tile and split a cost model (`estimate`: the estimate and a last tie-break)
/// estimates fastest, among the tiles the template prefers most (the models do not tell
/// every variant apart: the template's measurements do, [`Tile::pref`]; the fp32
/// matmul's are k steps of 16 and 4×8 lanes). Small products tie often (the launch and
/// the k steps' latency dominate): ties go to fewer parts, the smaller tile (less work
/// past the product's edges), fewer threads, fewer rows (a wider tile), then
/// `estimate`'s tie-break (fewer rows per thread). `None` for no tiles.
fn fastest(
    tiles: &[Tile],
    p: Product,
    mps: i64,
    split_area: impl Fn(&Tile) -> i64 + Copy,
    estimate: impl Fn(&Tile, i64) -> (model::Estimate, i64) + Copy,
) -> Option<Choice> {
    let top = tiles.iter().map(|t| t.pref).max()?;
    let (t, s, e) = tiles
        .iter()
        .filter(|t| t.pref == top)
        .flat_map(|t| {
            split_factors(t, p, split_area)
                .into_iter()
                .map(move |s| (t, s, estimate(t, s)))
        })
        // The first of equal keys wins: the candidates' order breaks what is left.
        .min_by_key(|(t, s, (e, tie))| {
            let area = t.block_m * t.block_n;
            let cycles = e.cycles.round() as i64;
            (cycles, *s, area, t.threads, t.block_m, *tie)
        })
        .map(|(t, s, (e, _))| (t, s, e))?;
    let why = format!(
        "cost model: {}x{} tiles, {} block{} over {mps} multiprocessors, {} at once on each, \
         about {:.0}k cycles",
        t.block_m,
        t.block_n,
        e.blocks,
        if e.blocks == 1 { "" } else { "s" },
        e.resident,
        e.cycles / 1000.0
    );
    Some((t.config.clone(), s, why))
}

/// The block-count rule (tiles the model does not describe); `None` for an empty space.
fn by_blocks(candidates: &[Tile], p: Product) -> Option<Choice> {
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

/// [`pick`], or `fallback` (the template's default, not split) for an empty space.
pub fn pick_or(
    candidates: &[Tile],
    p: Product,
    multiprocessors: u64,
    fallback: impl FnOnce() -> Config,
) -> Choice {
    pick_or_with(candidates, p, multiprocessors, &model::H100, fallback)
}

/// [`pick_or`] with `constants` for the CUDA-core model ([`pick_with`]).
pub fn pick_or_with(
    candidates: &[Tile],
    p: Product,
    multiprocessors: u64,
    constants: &model::Constants,
    fallback: impl FnOnce() -> Config,
) -> Choice {
    pick_with(candidates, p, multiprocessors, constants)
        .unwrap_or_else(|| (fallback(), 1, "the template's default".into()))
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

/// Whether splitting an `m × n × k` product of `block_m × block_n` tiles in `splits`
/// parts can pay: the whole tiles fill less than a wave ([`ENOUGH_TILES`] blocks), the
/// parts make at most four, and each part walks at least half of [`MIN_SPLIT_K`] of
/// the reduction ([`MIN_ROW_SPLIT_K`] for row tiles, whose partials are one row each).
/// Unsplit configs always may.
pub fn split_pays(m: i64, n: i64, k: i64, (block_m, block_n): (i64, i64), splits: i64) -> bool {
    let tiles = ceil_div(m, block_m) * ceil_div(n, block_n);
    let part = if block_m == 1 {
        MIN_ROW_SPLIT_K
    } else {
        MIN_SPLIT_K / 2
    };
    splits == 1
        || (tiles < ENOUGH_TILES && tiles * splits <= 4 * ENOUGH_TILES && k >= splits * part)
}

/// The shortest reduction one part of a split row tile walks: one k step of 32. Its
/// partials are `splits · n` floats, a row each, so a part may be as short as one step
/// (on an H100 the row tiles split in 32 and 64 parts ran 1×768×3072 in 5.2–6.3 µs,
/// `measurements/h100-2026-11-27c/B-gemv.txt`).
pub const MIN_ROW_SPLIT_K: i64 = 32;

/// The split factors the templates' spaces offer and the cost models weigh (each only
/// where it can pay, [`split_pays`]: 32 and 64 parts over at most 16 and 8 tiles and
/// reductions of 4096 and 8192 or more).
pub const SPLIT_FACTORS: [i64; 6] = [2, 4, 8, 16, 32, 64];

/// How many parts to split the reduction of an `m × n × k` product into, with
/// `block_m × block_n` tiles: 1 where the tiles alone give half of [`ENOUGH_TILES`]
/// blocks or the reduction is short; else enough parts to reach that many blocks, each
/// part at least [`MIN_SPLIT_K`] long, at most [`BLOCK_COUNT_MAX_SPLITS`].
pub fn split_k(m: i64, n: i64, k: i64, block_m: i64, block_n: i64) -> i64 {
    let tiles = ceil_div(m, block_m) * ceil_div(n, block_n);
    // Half a wave of whole tiles is better served by a smaller tile than by writing and
    // summing partial products.
    if tiles >= ENOUGH_TILES / 2 {
        return 1;
    }
    let wanted = ceil_div(ENOUGH_TILES, tiles);
    wanted.min(k / MIN_SPLIT_K).clamp(1, BLOCK_COUNT_MAX_SPLITS)
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
                per_thread: None,
                matrix: None,
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
            side(&pick(&tiles(), Product::whole(2048, 2048, 64, 1), 128).unwrap()),
            128
        );
        // 512²: only 32-tiles give 256 ≥ 128 blocks (64-tiles give 64).
        assert_eq!(
            side(&pick(&tiles(), Product::whole(512, 512, 64, 1), 128).unwrap()),
            32
        );
        // A batch of 16 products counts its grid layers: 128-tiles then give 256.
        assert_eq!(
            side(&pick(&tiles(), Product::whole(512, 512, 64, 16), 128).unwrap()),
            128
        );
        // Nothing fills it: the most blocks, the smallest tile.
        let (_, s, why) = pick(&tiles(), Product::whole(64, 64, 64, 1), 128).unwrap();
        assert_eq!((s, why.contains("most blocks")), (1, true));
        assert!(pick(&[], Product::whole(64, 64, 64, 1), 128).is_none());
    }

    #[test]
    fn long_reductions_over_few_tiles_split_where_allowed() {
        // 49 × 512 × 4608 (ResNet-50's 7² 3×3 layer).
        let (c, s, _) = pick(&tiles(), Product::split(49, 512, 4608), 128).unwrap();
        let b = c.0[0].1;
        assert_eq!(s, split_k(49, 512, 4608, b, b));
        assert!(
            s > 1 && s <= BLOCK_COUNT_MAX_SPLITS && 4608 / s >= MIN_SPLIT_K,
            "{s}"
        );
        // Splitting lets a larger tile fill the GPU than the whole product takes.
        let (w, ws, _) = pick(&tiles(), Product::whole(49, 512, 4608, 1), 128).unwrap();
        assert_eq!(ws, 1);
        assert!(b >= w.0[0].1);
        // Tiles enough, or a short sum: no split.
        assert_eq!(split_k(112 * 112, 64, 576, 64, 64), 1);
        assert_eq!(split_k(49, 64, 300, 64, 64), 1);
    }
}
