//! The fp32 matmul template: `C[m, n] = A[m, k] @ B[k, n]`, any M, N, K.
//!
//! A block computes a `BM × BN` tile of C, walking K in steps of `BK`. Its threads are
//! arranged as seed 002's CUDA-core matmul arranges them,
//!
//! ```text
//! spatial(wm, wn) * repeat(rm, rn) * spatial(lm, ln) * repeat(tm, tn)
//!   warps            warp repeats     lanes of a warp   per-thread tile
//! ```
//!
//! so `BM = wm·rm·lm·tm`, `BN = wn·rn·ln·tn`, and each thread accumulates
//! `rm·tm × rn·tn` outputs in registers. The kernel (see [`kernel`]) is
//!
//! - **double-buffered**: two shared stages; tile `k + 1` is fetched from global memory
//!   into registers while tile `k` is multiplied, then stored to the other stage, with one
//!   barrier per step;
//! - **predicated at tile edges only**: the global loads test their row and column and
//!   load zero outside the matrix, so the inner product has no predicate at all and every
//!   M, N, K is right (primes included);
//! - **vectorized** where rows allow: 128-bit global loads of A when `K % 4 == 0` and of B
//!   (and stores of C) when `N % 4 == 0`, scalar otherwise; 128-bit shared reads of the
//!   register fragments;
//! - **block-swizzled**: consecutive blocks walk `g` tile rows column by column, so the
//!   blocks that run together share rows of A and columns of B in L2;
//! - **free of bank conflicts** in its shared reads (a warp reads `lm` and `ln` distinct
//!   16-byte groups) and, through a padded, transposed A tile, in its shared stores.
//!
//! The schedule space ([`space`]) is hardware-centric: it enumerates the parameters above
//! from the target's threads, shared memory and registers, never from the input size.

pub mod align;
mod kernel;
mod space;

pub use super::tiling::limits_over_views;
pub use kernel::{add_kernel, template, template_over};
pub use space::{default_config, default_config_over_views, space, space_over_views};

use weft_ir::dtype::DType;
use weft_ir::func::Func;

use weft_codegen_common::TargetLimits;

use super::{BuildError, Config, ceil_div, rule, split_k};

/// The template's parameters, in order, with their meaning.
pub const PARAMS: &[(&str, &str)] = &[
    ("wm", "warps of a block along m"),
    ("wn", "warps of a block along n"),
    ("rm", "repeats of a warp's tile along m"),
    ("rn", "repeats of a warp's tile along n"),
    ("lm", "lanes of a warp along m (lm * ln = 32)"),
    ("ln", "lanes of a warp along n"),
    ("tm", "rows of a thread's tile (1, 2, 4 or 8)"),
    ("tn", "columns of a thread's tile (1, 2, 4 or 8)"),
    ("bk", "k extent of a block's step (4, 8, 16 or 32)"),
    (
        "g",
        "block swizzle: tile rows per group (1 = row-major order)",
    ),
    (
        "mb",
        "blocks per multiprocessor to leave registers for (CUDA's __launch_bounds__; 0: the compiler's choice)",
    ),
    (
        "ku",
        "k sub-steps unrolled at once, a divisor of bk (absent: all bk of them; fewer where hipcc would hoist a whole step's loads into spills)",
    ),
];

/// The parameters of the ops built on the template (`matmul` and the fp32 implicit-GEMM
/// convolutions): the template's and split-K's `sk`.
pub const OP_PARAMS: &[(&str, &str)] = &[
    PARAMS[0],
    PARAMS[1],
    PARAMS[2],
    PARAMS[3],
    PARAMS[4],
    PARAMS[5],
    PARAMS[6],
    PARAMS[7],
    PARAMS[8],
    PARAMS[9],
    PARAMS[10],
    PARAMS[11],
    split_k::PARAM,
    align::PARAM,
];

/// The space of the ops built on the template: [`space`], and its tiles of at least
/// 64×64 with k steps of 16 (a part's reduction is long) and no register cap split in
/// 2, 4, 8 and 16 parts ([`split_k`]).
pub fn op_space(limits: &TargetLimits) -> Vec<Config> {
    split_k::with_splits(space(limits), |c| {
        MatmulParams::from_config(c)
            .ok()
            .filter(|p| p.min_blocks == 0 && p.bk == 16)
            .map(|p| (p.block_m(), p.block_n()))
    })
}

/// [`op_space`] over views (the fp32 implicit-GEMM convolutions'): the same splits of
/// [`space_over_views`].
pub fn op_space_over_views(limits: &TargetLimits) -> Vec<Config> {
    op_space(&limits_over_views(limits))
}

/// [`describe`] with the split.
pub fn op_describe(config: &Config) -> Result<String, String> {
    let (rest, al) = align::parts(config).map_err(|e| e.to_string())?;
    let what = split_k::describe(&rest, describe)?;
    Ok(match al {
        Some(true) => format!("{what}, A and B copied into 32-byte-aligned buffers first"),
        Some(false) | None => what,
    })
}

/// Whether a config can pay at the product `m × n × k` (a split only over few tiles and
/// a long reduction, [`split_k::pays`]).
pub fn op_pays(m: i64, n: i64, k: i64, config: &Config) -> bool {
    split_k::config_pays((m, n, k), config, |c| {
        MatmulParams::from_config(c)
            .ok()
            .map(|p| (p.block_m(), p.block_n()))
    })
}

impl split_k::Anchor for MatmulParams {
    fn template_over(
        &self,
        name: &str,
        a: &weft_ir::expr::Buffer,
        b: &weft_ir::expr::Buffer,
        c: &weft_ir::expr::Buffer,
    ) -> Result<Func, weft_ir::template::TemplateError> {
        template_over(name, a, b, c, self)
    }

    fn bk(&self) -> i64 {
        self.bk
    }

    fn sums_last(&self) -> bool {
        true
    }

    fn template_over_last(
        &self,
        name: &str,
        a: &weft_ir::expr::Buffer,
        b: &weft_ir::expr::Buffer,
        partial: &weft_ir::expr::Buffer,
        last: crate::split_last::LastPart,
    ) -> Result<Func, weft_ir::template::TemplateError> {
        kernel::template_over_last(name, a, b, partial, last, self)
    }
}

/// A config of the matmul template, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatmulParams {
    pub warps: [i64; 2],
    pub repeat: [i64; 2],
    pub lanes: [i64; 2],
    pub tile: [i64; 2],
    pub bk: i64,
    pub group: i64,
    /// Blocks per multiprocessor the CUDA compiler should leave registers for (0: its
    /// own choice); ignored by the other backends.
    pub min_blocks: i64,
    /// The k sub-steps of a block step unrolled at once (a divisor of `bk`; `bk`: the
    /// whole step), fewer only where the target's compiler hoists an unrolled loop's
    /// loads ([`TargetLimits::hoists_unrolled_loads`]): the seed tile with its k step of
    /// 8 unrolled whole took 128 VGPRs and 263 spills for gfx1100, and 106 with one
    /// sub-step at a time (hipcc 5.2).
    pub k_unroll: i64,
}

impl MatmulParams {
    /// Seed 002's `spatial(4, 2) * repeat(2, 2) * spatial(4, 8) * repeat(4, 4)` with a
    /// k step of 8: a 128×128 tile of 256 threads, 8×8 outputs each.
    pub const SEED: MatmulParams = MatmulParams {
        warps: [4, 2],
        repeat: [2, 2],
        lanes: [4, 8],
        tile: [4, 4],
        bk: 8,
        group: 8,
        min_blocks: 0,
        k_unroll: 8,
    };

    /// The `min_blocks` that caps registers at 128 per thread (`65536 / (threads · 128)`
    /// blocks on a multiprocessor of 64K registers).
    pub fn blocks_at_128_registers(&self) -> i64 {
        (65536 / (self.threads() * 128)).max(1)
    }

    /// Rows of C per block.
    pub fn block_m(&self) -> i64 {
        self.warps[0] * self.repeat[0] * self.lanes[0] * self.tile[0]
    }
    /// Columns of C per block.
    pub fn block_n(&self) -> i64 {
        self.warps[1] * self.repeat[1] * self.lanes[1] * self.tile[1]
    }
    /// Threads per block.
    pub fn threads(&self) -> i64 {
        self.warps[0] * self.warps[1] * 32
    }
    /// Outputs each thread accumulates.
    pub fn accumulators(&self) -> i64 {
        self.repeat[0] * self.tile[0] * self.repeat[1] * self.tile[1]
    }
    /// Elements of A's and B's tiles each thread loads from global memory per k step
    /// (held in registers until they are stored to the shared stage).
    pub fn staged_per_thread(&self) -> i64 {
        (self.block_m() + self.block_n()) * self.bk / self.threads()
    }

    /// Bytes of shared memory: two stages of the A tile (transposed, padded) and of the
    /// B tile. The padding is at most 4 words per row; this counts the most.
    pub fn shared_bytes(&self) -> i64 {
        2 * self.bk * (self.block_m() + 4 + self.block_n()) * 4
    }

    /// An estimate of the 32-bit registers a thread needs: accumulators, the two register
    /// fragments, the staged global loads, and about 32 for addresses and loop state.
    pub fn registers(&self) -> i64 {
        let t = self.threads();
        let staged = ceil_div(self.block_m() * self.bk, t) + ceil_div(self.bk * self.block_n(), t);
        self.accumulators()
            + self.repeat[0] * self.tile[0]
            + self.repeat[1] * self.tile[1]
            + staged
            + 32
    }

    /// [`MatmulParams::registers`] on `r`: where its compiler hoists the loads of an
    /// unrolled loop, the fragments of every sub-step unrolled at once.
    pub fn registers_on(&self, r: &TargetLimits) -> i64 {
        let fragments = self.repeat[0] * self.tile[0] + self.repeat[1] * self.tile[1];
        let hoisted = if r.hoists_unrolled_loads {
            (self.k_unroll - 1) * fragments
        } else {
            0
        };
        self.registers() + hoisted
    }

    /// The config's parameters as a [`Config`].
    pub fn config(&self) -> Config {
        let v = [
            self.warps[0],
            self.warps[1],
            self.repeat[0],
            self.repeat[1],
            self.lanes[0],
            self.lanes[1],
            self.tile[0],
            self.tile[1],
            self.bk,
            self.group,
            self.min_blocks,
        ];
        let mut config = Config::of(PARAMS, v);
        // Written only where it is not the whole step, so that configs (and the records
        // of before `ku`) read as they did on targets that unroll it whole.
        if self.k_unroll != self.bk {
            config.0.push(("ku".to_string(), self.k_unroll));
        }
        config
    }

    /// Reads and checks a config: every parameter present and known, powers of two where
    /// the layout needs them, 32 lanes per warp.
    pub fn from_config(config: &Config) -> Result<MatmulParams, BuildError> {
        let err = |reason: String| config.invalid(reason);
        config.known(PARAMS, "matmul")?;
        let get = |name: &str| config.value(name);
        let p = MatmulParams {
            warps: [get("wm")?, get("wn")?],
            repeat: [get("rm")?, get("rn")?],
            lanes: [get("lm")?, get("ln")?],
            tile: [get("tm")?, get("tn")?],
            bk: get("bk")?,
            group: get("g")?,
            min_blocks: get("mb")?,
            k_unroll: config.get("ku").unwrap_or(get("bk")?),
        };
        let pow2 = |v: i64| v > 0 && v & (v - 1) == 0;
        // Three repeats in m make a block of 96 (or 48, 192) rows: the rows of A's tile
        // need not be a power of two (its loads cover any row count), and a product
        // just past a multiple of 128 rows then fills the multiprocessors' last round.
        if !pow2(p.repeat[0]) && p.repeat[0] != 3 {
            return Err(err(format!(
                "`rm` = {} must be 3 or a power of two",
                p.repeat[0]
            )));
        }
        for (name, v) in [
            ("wm", p.warps[0]),
            ("wn", p.warps[1]),
            ("rn", p.repeat[1]),
            ("lm", p.lanes[0]),
            ("ln", p.lanes[1]),
        ] {
            if !pow2(v) {
                return Err(err(format!("`{name}` = {v} must be a power of two")));
            }
        }
        if p.lanes[0] * p.lanes[1] != 32 {
            return Err(err(format!(
                "lm * ln = {} * {} must be 32 (the lanes of a warp)",
                p.lanes[0], p.lanes[1]
            )));
        }
        for (name, v) in [("tm", p.tile[0]), ("tn", p.tile[1])] {
            if ![1, 2, 4, 8].contains(&v) {
                return Err(err(format!("`{name}` = {v} must be 1, 2, 4 or 8")));
            }
        }
        if ![4, 8, 16, 32].contains(&p.bk) {
            return Err(err(format!("`bk` = {} must be 4, 8, 16 or 32", p.bk)));
        }
        if p.group < 1 {
            return Err(err(format!("`g` = {} must be at least 1", p.group)));
        }
        if p.k_unroll < 1 || p.bk % p.k_unroll != 0 {
            return Err(err(format!(
                "`ku` = {} must divide `bk` = {}",
                p.k_unroll, p.bk
            )));
        }
        if !(0..=32).contains(&p.min_blocks) {
            return Err(err(format!("`mb` = {} must be in 0..=32", p.min_blocks)));
        }
        if p.threads() > 1024 {
            return Err(err(format!(
                "{} threads per block (wm * wn * 32); at most 1024",
                p.threads()
            )));
        }
        Ok(p)
    }
}

/// `128x128x8 tile, 256 threads, 8x8 per thread`.
pub fn describe(config: &Config) -> Result<String, String> {
    let p = MatmulParams::from_config(config).map_err(|e| e.to_string())?;
    let mut cap = match p.min_blocks {
        0 => String::new(),
        b => format!(", registers for {b} blocks/SM"),
    };
    if p.k_unroll != p.bk {
        cap.push_str(&format!(", k unrolled by {}", p.k_unroll));
    }
    Ok(format!(
        "{}x{}x{} tile, {} threads, {}x{} per thread, {} B shared{cap}",
        p.block_m(),
        p.block_n(),
        p.bk,
        p.threads(),
        p.repeat[0] * p.tile[0],
        p.repeat[1] * p.tile[1],
        p.shared_bytes()
    ))
}

/// Builds the product `C[m, n] = A[m, k] @ B[k, n]` with an [`OP_PARAMS`] `config`
/// (split where it has `sk`, the operands copied aligned where it has `al`).
pub fn build(m: i64, n: i64, k: i64, config: &Config) -> Result<Func, BuildError> {
    let (rest, al) = align::parts(config)?;
    let (rest, sk) = split_k::parts(&rest)?;
    let p = MatmulParams::from_config(&rest)?;
    if sk == 1 {
        if align::copies(al, n, k) {
            return align::product((m, n, k), &p, config);
        }
        return Ok(template(m, n, k, &p)?);
    }
    if al == Some(true) {
        return Err(config.invalid(
            "`al` = 1 copies the operands of an unsplit product; this one is split (`sk`)"
                .to_string(),
        ));
    }
    split_k::product_op("matmul", [m, n, k], DType::F32, &p, sk).map_err(|e| config.invalid(e))
}

/// The space's configs that need no register cap, with their block tiles: what the
/// stated rule and a whole-model tuning run choose among (the row tiles apart: the rule
/// takes them by [`row_rule`], the cost model does not describe them).
pub fn tiles(limits: &TargetLimits) -> Vec<rule::Tile> {
    space(limits)
        .iter()
        .filter_map(|c| MatmulParams::from_config(c).ok())
        .filter(|t| (t.min_blocks == 0 || space::is_third_row_tile(t)) && t.block_m() > 1)
        .filter(|t| limits.register_cap || t.staged_per_thread() <= MAX_STAGED_UNCAPPED)
        .map(|t| rule::Tile {
            block_m: t.block_m(),
            block_n: t.block_n(),
            threads: t.threads(),
            bk: t.bk,
            pref: preference(&t),
            per_thread: Some(rule::model::ThreadTile {
                rows: t.repeat[0] * t.tile[0],
                cols: t.repeat[1] * t.tile[1],
                min_blocks: t.min_blocks,
            }),
            matrix: None,
            config: t.config(),
        })
        .collect()
}

/// The most operand elements a thread stages from global memory per k step
/// ([`MatmulParams::staged_per_thread`]) in the tiles the rule weighs where the target
/// cannot cap registers (WGSL, MSL). Through Vulkan on an H100 every config staging 24 or
/// more ran at 0.13–0.79× of the shape's best at 3001³, 1021³ and 1000³ (48 configs
/// each, `weft sweep --trials`, `measurements/h100-2026-11-27c/C-fp32-vk.json`);
/// the rule, fitted on CUDA, took such tiles there (32×128 over two warps, 40 a thread;
/// 64×128 over four, 24) and ran 0.32–0.77× of the best. Within 20 it takes 64×256 over
/// eight warps, which ran 0.56–0.94× there. CUDA keeps every tile: its compiler holds
/// them in registers.
pub const MAX_STAGED_UNCAPPED: i64 = 20;

/// The rule's preference among configs of one tile and thread count: k steps of 16
/// over 8 (but see [`prefers_short_steps`]), then lanes laid out 4×8 over 8×4. Measured
/// on an H100 (`weft sweep` over 30 shapes, 2026-11-24): the fastest config tuning found
/// had k steps of 16 at 24 of them and 4×8 lanes at 23, while the rule, taking the
/// shorter step on a tie, ran 0.46–1.00x of the tuned speed.
fn preference(t: &MatmulParams) -> i64 {
    let bk = if prefers_short_steps(t) { 8 } else { 16 };
    2 * i64::from(t.bk == bk) + i64::from(t.lanes == [4, 8])
}

/// Whether a tile runs faster with k steps of 8 than of 16: four warps whose threads
/// each hold 128 accumulators or more. On an H100 the 128×128 tile of 2×2 warps with 8×4
/// thread tiles ran 1.01–1.41× faster with steps of 8 at 14 of the 15 shapes of
/// 10⁹ multiply-adds or more where both were timed, the same tile over 8 warps 0.84–0.98×
/// (`weft sweep --trials`, 2026-11-25, `measurements/h100-2026-11-25b/fit-*.json`,
/// `-25c/mixed-*.json`, `-25e/bk8-*.json`). Neither spills (ptxas: 233 and 219 registers
/// at 2048³); the longer step's loop body is twice the code (4921 against 2697 SASS
/// lines). With steps of 16 the rule's default at 2048³,
/// 2039³ and 4096³ ran 5–11% slower than that tile with steps of 8 (issue 26's "never
/// slower than the best fixed config", `measurements/h100-2026-11-26c/fp32-fixed.txt`).
fn prefers_short_steps(t: &MatmulParams) -> bool {
    t.threads() <= 128 && t.accumulators() >= 128
}

/// The stated rule's config for product `p` on `limits` ([`super::rule`]) over
/// [`tiles`], with its split parts and why, by the cost model's constants for the target
/// ([`rule::model::for_target`]).
pub fn rule_config(limits: &TargetLimits, p: rule::Product) -> rule::Choice {
    rule_config_with(limits, p, rule::model::for_target(limits))
}

/// [`rule_config`] for the implicit-GEMM convolutions (`limits` already
/// [`limits_over_views`]): without the 96-row tile, timed on plain products only.
pub fn rule_config_over_views(limits: &TargetLimits, p: rule::Product) -> rule::Choice {
    rule_config_among(limits, p, rule::model::for_target(limits), false)
}

/// [`rule_config`] with `constants` for the cost model: what a fit of them evaluates
/// (`ops/tests/fit_fp32_rule.rs`).
pub fn rule_config_with(
    limits: &TargetLimits,
    p: rule::Product,
    constants: &rule::model::Constants,
) -> rule::Choice {
    rule_config_among(limits, p, constants, true)
}

/// The shortest reduction over which the rule weighs the 96-row tile
/// ([`space::is_third_row_tile`]), and then unsplit: its 12×8 accumulators a thread make
/// a long prologue and epilogue that short walks do not repay. On an H100
/// (`measurements/h100-2026-11-27i/rm3-mixed.json`, every config of the tile at the
/// 60 `mixed` shapes) it was the fastest config measured at 3001³, 3072³ and 4096³ (and
/// from 2049³ on, `cubes.json`), but ran 0.68–0.79× of the fastest where the cost model
/// took it over short reductions (1531×769×383 split in 2, 4095×4097×63) and 0.86× split
/// in 4 at 1024×768×3072.
pub const THIRD_ROWS_MIN_K: i64 = 1024;

/// The rule over [`tiles`]; the 96-row tile ([`space::is_third_row_tile`]) only where
/// `third_rows`, `p` is one product (it was timed on plain products alone) and its
/// reduction is at least [`THIRD_ROWS_MIN_K`] long.
fn rule_config_among(
    limits: &TargetLimits,
    p: rule::Product,
    constants: &rule::model::Constants,
    third_rows: bool,
) -> rule::Choice {
    if let Some(choice) = row_rule(limits, p) {
        return choice;
    }
    let third_rows = third_rows && p.batch == 1 && p.k >= THIRD_ROWS_MIN_K;
    let candidates: Vec<rule::Tile> = tiles(limits)
        .into_iter()
        .filter(|t| {
            third_rows
                || !MatmulParams::from_config(&t.config).is_ok_and(|p| space::is_third_row_tile(&p))
        })
        .collect();
    let choice = rule::pick_or_with(&candidates, p, limits.multiprocessors, constants, || {
        default_config(limits)
    });
    let choice = unaligned_rule(limits, p, &choice).unwrap_or(choice);
    small_rule(limits, p, &choice).unwrap_or(choice)
}

/// Where the cost model takes the four-warp 128×128 tile with k steps of 8, unsplit,
/// over a product whose rows are not 16-byte aligned in either operand (k and n not
/// multiples of 4: A's and B's loads are 4-byte, four times the requests), the same
/// tile over eight warps with registers capped for two blocks a multiprocessor
/// ([`MatmulParams::SEED`] capped, the template's fixed default): twice the warps hide
/// the requests' latency. On an H100 it ran 2.5–3.0% faster at all 48 such cubes from
/// 1985³ to 2047³ and at 2039³ (411.3 against 421.5 µs); at aligned sizes the four-warp
/// tile stays the faster (2048³: 361.8 against 377.5;
/// `measurements/h100-2026-11-27i/cubes.json`, `fp32-mixed-fixed.json`). Only
/// where the compiler takes a register cap and does not hoist unrolled loads (CUDA),
/// as measured. `None` elsewhere.
fn unaligned_rule(
    limits: &TargetLimits,
    p: rule::Product,
    (config, splits, why): &rule::Choice,
) -> Option<rule::Choice> {
    if !limits.register_cap || limits.hoists_unrolled_loads || p.k % 4 == 0 || p.n % 4 == 0 {
        return None;
    }
    let picked = MatmulParams::from_config(config).ok()?;
    let four_warps = picked.threads() == 128 && picked.bk == 8 && picked.min_blocks == 0;
    if *splits != 1
        || p.batch != 1
        || !four_warps
        || (picked.block_m(), picked.block_n()) != (128, 128)
    {
        return None;
    }
    // The template's fixed default where the target caps registers: the seed tile,
    // capped for two blocks.
    let seed = default_config(limits);
    let eight_warps = MatmulParams::from_config(&seed).ok()?;
    if eight_warps.min_blocks == 0 || (eight_warps.block_m(), eight_warps.block_n()) != (128, 128) {
        return None;
    }
    let why = format!(
        "{why}; rows not 16-byte aligned (k, n not multiples of 4): the same 128x128 tile over 8 warps, registers for 2 blocks/SM"
    );
    Some((seed, 1, why))
}

/// The row tile for a product too small to fill the GPU: where the cost model's pick
/// (`choice`, split or not) launches fewer blocks than a quarter of the multiprocessors,
/// each walks its whole reduction alone and the launch lasts as long as one block does.
/// The row tile (four warps across 128 columns, k steps of 32, unsplit) gives every row
/// its own blocks, each a quarter of the work or less. Measured on an H100 with the
/// untested loads (2026-11-27d, `weft sweep`, tuning 48 configs a shape,
/// `measurements/h100-2026-11-27d/fp32-mixed.json`): at 64³, 127³, 128³ and
/// 17×33×65, where the model's 16×64 tile launched 2 to 16 blocks, a row tile was the
/// fastest config timed, 1.3–1.6× faster than the model's pick; the model has no term
/// for a block's fixed latency, which is all such a product costs. `None` elsewhere.
fn small_rule(
    limits: &TargetLimits,
    p: rule::Product,
    (config, splits, _): &rule::Choice,
) -> Option<rule::Choice> {
    let picked = MatmulParams::from_config(config).ok()?;
    let blocks = ceil_div(p.m, picked.block_m()) * ceil_div(p.n, picked.block_n()) * splits;
    if p.batch != 1 || blocks * 4 >= limits.multiprocessors as i64 {
        return None;
    }
    let tile = row_tile(limits)?;
    let why = format!(
        "the cost model's pick launches {blocks} block{}, under a quarter of {} multiprocessors: a row tile of {} columns, {} threads",
        if blocks == 1 { "" } else { "s" },
        limits.multiprocessors,
        tile.block_n(),
        tile.threads()
    );
    Some((tile.config(), 1, why))
}

/// The space's row tile the rules take: four warps, k steps of 32.
fn row_tile(limits: &TargetLimits) -> Option<MatmulParams> {
    space(limits)
        .iter()
        .filter_map(|c| MatmulParams::from_config(c).ok())
        .find(|t| t.block_m() == 1 && t.threads() == 128 && t.bk == 32)
}

/// The row tile the rule takes for a product of one row that may be split: four warps
/// across 128 columns with k steps of 32, split in the most parts that can pay
/// ([`rule::split_pays`], up to [`rule::MAX_SPLITS`]). On an H100 at m = 1 that tile
/// split in 32 or 64 parts was the fastest of 40 configs at 1×1000×2048 and 1×768×3072
/// and within 3% of the fastest at 1×4096×4096 (`weft sweep`,
/// `measurements/h100-2026-11-27c/B-gemv.txt`). `None` for other products, or where
/// the space holds no such tile.
fn row_rule(limits: &TargetLimits, p: rule::Product) -> Option<rule::Choice> {
    if p.m != 1 || p.batch != 1 || !p.split {
        return None;
    }
    let tile = row_tile(limits)?;
    let splits = rule::SPLIT_FACTORS
        .iter()
        .copied()
        .filter(|&s| rule::split_pays(p.m, p.n, p.k, (1, tile.block_n()), s))
        .max()
        .unwrap_or(1);
    let why = format!(
        "one row: a row tile of {} columns, {} threads",
        tile.block_n(),
        tile.threads()
    );
    Some((tile.config(), splits, why))
}

/// The config of [`build`] with no tuning record, and why: the rule over the
/// `m × n × k` product, split (as `sk`) where its tiles are few and its reduction long.
pub fn op_rule(limits: &TargetLimits, m: i64, n: i64, k: i64) -> (Config, String) {
    rule::for_op(rule_config(limits, rule::Product::split(m, n, k)))
}
