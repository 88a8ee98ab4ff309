//! The skinny product over a K-major weight: `c[m, n] = Σ_k a[m, k] · w[n, k]` for an `a`
//! of few rows (`m` ≤ [`MAX_M`]) and a `w` stored `[n, k]` — PyTorch's `nn.Linear`
//! layout, each output column's `k` weights contiguous — read once at the speed of
//! memory.
//!
//! [`super`]'s template reads a row-major `[k, n]` weight: a block owns a few dozen
//! columns and its threads split `k`, so the narrow products of a decode step (2048
//! columns) give 64 blocks, fewer than an H200's 132 multiprocessors, and a block's sums
//! need a block-wide combine. Here every column is independent:
//!
//! - a **warp owns `cols` columns** (1–4) and streams their `k` contiguous elements: at
//!   each load instruction its 32 lanes read 32 consecutive 16-byte pieces (512 bytes of
//!   one column: 4 whole 128-byte lines), `unroll` loads a column in flight a thread,
//!   all issued before the first is used;
//! - `ksplit` warps (1, 2, 4) may **share a column's `k`** (interleaved 512-byte pieces),
//!   where a product's columns are too few to give the GPU enough loads in flight;
//! - a block is `warps` warps: `warps / ksplit` column groups of `cols` columns, so a
//!   product of `n` columns has `n / (cols · warps / ksplit)` blocks — as many as it
//!   needs, with no split of `k` across blocks;
//! - each lane reads the `m` rows of `a` at its 8 (f16) or 4 (f32) positions of `k` once
//!   a load and uses them for all its `cols` columns (reuse in registers: at 8 rows and 4
//!   columns, two 16-byte loads of `a` for each of `w`);
//! - sums in f32; a warp's 32 partial sums of an output are combined by butterfly
//!   shuffles across [`KmajorParams::shuffle`] lanes, then the remaining partials (the
//!   `ksplit` warps', or every lane's where the target has no subgroups) in order
//!   `0, 1, …` through shared memory, after one barrier: the same inputs give the same
//!   bits, whatever the timing;
//! - the total is stored once, tested against `n`, and the caller fuses its epilogue
//!   (bias, residual, activation, cast) into that store ([`weft_ir::fusion`]), as for the
//!   other templates.
//!
//! **Why `a` is not staged in shared memory.** `a` is 4–11 KB a row (88 KB at 8 rows of
//! 5632): staging it would need up to 88 KB of shared memory a block, a pass over all of
//! it and a barrier before the first load of `w` — a memory round trip added to a kernel
//! that is itself a few round trips long (TinyLlama's o projection: 8.4 MB, 1.75 µs at
//! 4.8 TB/s). Read from global memory instead, each 16-byte piece of `a` is fetched from
//! L2 by the first warp of a multiprocessor and hit in L1 by the others; L1 serves
//! ~128 bytes a cycle a multiprocessor against the ~18 bytes a cycle of `w` its share of
//! the bandwidth brings (4.8 TB/s ÷ 132 ÷ 2 GHz), so reading `a` at `m / cols` (≤ 2 with
//! the rule's `cols`) times `w`'s rate costs no bandwidth that `w` needs.
//!
//! Every size is predicated: columns past `n` load nothing (the test is uniform across a
//! warp: one column each) and store nothing; a `k` that is not a multiple of 8 (f16) or
//! 4 (f32) leaves rows of `w` not 16-byte aligned, and then every load is element by
//! element; only the last step, where a step's span does not divide `k`, tests `k`.

mod kernel;

use weft_codegen_common::TargetLimits;
use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::template::TemplateError;

use super::{MAX_M, vec_of};
use crate::{BuildError, Config, ceil_div, within};

pub use kernel::{template_normed, template_over};

/// Lanes of a warp: the template's unit of threads that stream one column (CUDA's warp,
/// Metal's SIMD group, half a wave of 64 on AMD; WGSL subgroups of 32 where the adapter
/// has them).
pub const WARP: i64 = 32;

/// Bytes in flight a multiprocessor the rule aims at: Little's law at an H200's
/// 4.8 TB/s and ~1 µs of loaded memory latency is ~4.8 MB across the GPU, ~36 KB for each
/// of 132 multiprocessors; 40 KB leaves some margin.
pub const INFLIGHT_PER_SM: i64 = 40 * 1024;

/// Blocks a multiprocessor the rule wants where blocks of 2 warps or more can give them:
/// all of a product's blocks are resident at once (it is one wave), and a multiprocessor
/// with one block more than another streams that much longer; 4 keeps the difference
/// within a quarter.
pub const BLOCKS_PER_SM: i64 = 4;

/// The template's parameters (its space's axes).
pub const PARAMS: [(&str, &str); 5] = [
    ("warps", "warps a block"),
    ("cols", "columns a warp streams (1 to 4)"),
    (
        "unroll",
        "16-byte loads a column a thread has in flight each step",
    ),
    (
        "ksplit",
        "warps sharing one column's k (1, 2 or 4), combined in order through shared memory",
    ),
    (
        "shuffle",
        "lanes a warp's sums are shuffled across (1: shared memory only)",
    ),
];

/// A checked config of the K-major skinny-product template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KmajorParams {
    /// Warps a block (threads: `warps · 32`).
    pub warps: i64,
    /// Columns a warp streams.
    pub cols: i64,
    /// Loads a column a thread has in flight each step (`cols · unroll` in all).
    pub unroll: i64,
    /// Warps sharing one column's `k`; divides `warps`.
    pub ksplit: i64,
    /// Lanes the butterfly spans (a power of two up to [`WARP`]; 1: none).
    pub shuffle: i64,
}

impl KmajorParams {
    /// `config`'s parameters, checked.
    pub fn from_config(config: &Config) -> Result<KmajorParams, BuildError> {
        config.known(&PARAMS, "gemv-kmajor")?;
        let p = KmajorParams {
            warps: config.value("warps")?,
            cols: config.value("cols")?,
            unroll: config.value("unroll")?,
            ksplit: config.value("ksplit")?,
            shuffle: config.value("shuffle")?,
        };
        let pow2 = |v: i64| v >= 1 && v & (v - 1) == 0;
        let reason = if !(1..=32).contains(&p.warps) {
            Some("warps must be 1 to 32")
        } else if !(1..=4).contains(&p.cols) {
            Some("cols must be 1 to 4")
        } else if !(1..=8).contains(&p.unroll) {
            Some("unroll must be 1 to 8")
        } else if ![1, 2, 4].contains(&p.ksplit) || p.warps % p.ksplit != 0 {
            Some("ksplit must be 1, 2 or 4 and divide warps")
        } else if !pow2(p.shuffle) || p.shuffle > WARP {
            Some("shuffle must be a power of two up to 32")
        } else {
            None
        };
        match reason {
            Some(r) => Err(config.invalid(r.to_string())),
            None => Ok(p),
        }
    }

    /// The config of these parameters.
    pub fn config(&self) -> Config {
        Config::of(
            &PARAMS,
            [
                self.warps,
                self.cols,
                self.unroll,
                self.ksplit,
                self.shuffle,
            ],
        )
    }

    /// Threads a block.
    pub fn threads(&self) -> i64 {
        self.warps * WARP
    }

    /// Columns a block owns.
    pub fn block_cols(&self) -> i64 {
        self.warps / self.ksplit * self.cols
    }

    /// Partial sums of each output left after the butterflies: one a run of `shuffle`
    /// lanes of each of the `ksplit` warps.
    pub fn parts(&self) -> i64 {
        WARP / self.shuffle * self.ksplit
    }

    /// Shared memory the combine takes at `m` rows (bytes): every part of every output
    /// of the block, in f32.
    pub fn shared_bytes(&self, m: i64) -> i64 {
        self.parts() * m * self.block_cols() * 4
    }

    /// Shared memory the combine takes at `m` rows with an RMS norm folded in (bytes):
    /// [`Self::shared_bytes`] and every part's `m` sums of squares.
    pub fn shared_bytes_normed(&self, m: i64) -> i64 {
        self.parts() * m * (self.block_cols() + 1) * 4
    }

    /// Whether the config fits `limits` at `m` rows: threads, the combine's shared
    /// memory, and shuffles no wider than the target's subgroups.
    pub fn fits(&self, limits: &TargetLimits, m: i64) -> bool {
        within(self.threads(), limits.max_threads_per_block)
            && within(self.shared_bytes(m), limits.max_shared_bytes)
            && self.shuffle <= crate::rows::shuffle_lanes(limits, WARP, self.threads())
    }

    /// The stated rule's parameters for an `m × n × k` product over a `w` of `dtype` on
    /// `limits`, with why.
    ///
    /// - **`cols`** by rows: 1 at one row, 2 at 2–3, 4 from 4. A lane reads `m` 16-byte
    ///   pieces of `a` (from L1) for the `cols` pieces of `w` it uses them on; `m / cols`
    ///   ≤ 2 keeps `a`'s reads within L1's ~128 bytes a cycle while `w` arrives at ~18
    ///   (its share of 4.8 TB/s on 132 multiprocessors), and the `m × cols` sums (≤ 32
    ///   registers) fit beside the loads.
    /// - **`unroll`** = 8 / `cols`: 8 loads of 16 bytes in flight a thread, 4 KB a warp.
    /// - **`ksplit`**: the loads in flight across the GPU should reach
    ///   [`INFLIGHT_PER_SM`] × multiprocessors (5.3 MB on the H200's 132) or the whole
    ///   weight, whichever is less (a weight all in flight at once cannot use more).
    ///   Each doubling of `ksplit` doubles the warps; the fewest of 1, 2, 4 that reach
    ///   it, while a step (`32 · vec · unroll · ksplit` elements) still fits in `k`.
    ///   TinyLlama at one row in f16 (4 KB a warp in flight): q/k/v 2560 warps = 10.5 MB,
    ///   o and down 2048 = 8.4 MB — no split; at 8 rows (4 columns a warp) o and down
    ///   512 warps = 2.1 MB → `ksplit` 4 (8.4 MB), q/k/v 640 (2.6 MB; 5.24 MB at 2, just
    ///   under 5.41) → 4, gate/up 2816 (11.5 MB) → 1. Registers cap what is resident:
    ///   at 8 rows ptxas gives a thread 138–212 (sm_90), 9–14 warps a multiprocessor,
    ///   36–56 KB in flight — about the target still; at one row 72–76 (28 warps).
    /// - **`warps`** 8 (256 threads: up to 255 registers a thread), halved down to 2
    ///   (and not below `ksplit`) while the product's blocks (`n / (cols · warps /
    ///   ksplit)`) are fewer than [`BLOCKS_PER_SM`] a multiprocessor, and while the
    ///   combine's shared memory does not fit (plain WebGPU: no shuffles, 32 parts an
    ///   output); `shuffle` as wide as the target's subgroups allow. At one row on the
    ///   H200: o and down 1024 blocks of 2 warps (512 of 4 would be 3.9 a
    ///   multiprocessor), q/k/v 640 of 4, gate/up 1408 of 8, the vocabulary head 4000 of
    ///   8; at 8 rows 512–704 blocks of 4 warps, the head 1000 of 8.
    pub fn rule(
        limits: &TargetLimits,
        m: i64,
        n: i64,
        k: i64,
        dtype: DType,
    ) -> (KmajorParams, String) {
        let cols = match m {
            ..=1 => 1,
            2..=3 => 2,
            _ => 4,
        };
        let unroll = 8 / cols;
        let vec = vec_of(dtype);
        let per_warp = WARP * cols * unroll * super::LOAD_BYTES;
        let weight = n * k * dtype.bytes() as i64;
        let want = (INFLIGHT_PER_SM * limits.multiprocessors.max(1) as i64).min(weight);
        let warps_of = |ksplit: i64| ceil_div(n, cols) * ksplit;
        let mut ksplit = 1;
        while ksplit < 4
            && warps_of(ksplit) * per_warp < want
            && WARP * vec * unroll * ksplit * 2 <= k
        {
            ksplit *= 2;
        }
        // 8 warps a block, halved (down to 2, and to `ksplit`) while the blocks are fewer
        // than BLOCKS_PER_SM a multiprocessor, and while the combine does not fit.
        let sms = limits.multiprocessors.max(1) as i64;
        let max_warps = (limits.max_threads_per_block as i64 / WARP).clamp(1, 8);
        let mut p = KmajorParams {
            warps: max_warps.max(ksplit),
            cols,
            unroll,
            ksplit,
            shuffle: 1,
        };
        loop {
            p.shuffle = crate::rows::shuffle_lanes(limits, WARP, p.threads());
            let few = ceil_div(n, p.block_cols()) < BLOCKS_PER_SM * sms && p.warps > 2;
            if p.warps <= ksplit || (p.fits(limits, m) && !few) {
                break;
            }
            p.warps /= 2;
        }
        let why = format!(
            "rule: {m} row(s) ≤ {MAX_M}: w K-major, {cols} column(s) a warp, {} KB in flight across {} warps (want {} KB), k over {ksplit} warp(s), {} blocks of {} warps",
            warps_of(ksplit) * per_warp / 1024,
            warps_of(ksplit),
            want / 1024,
            ceil_div(n, p.block_cols()),
            p.warps
        );
        (p, why)
    }
}

/// The template's space on `limits` at `m` rows: 2 to 16 warps, 1 to 4 columns a warp,
/// 2 to 8 loads in flight a thread, `k` shared by 1, 2 or 4 warps, the butterfly as wide
/// as the target's subgroups allow.
pub fn space(limits: &TargetLimits, m: i64) -> Vec<Config> {
    let mut out = Vec::new();
    for warps in [2, 4, 8, 16] {
        for cols in [1, 2, 4] {
            for unroll in [1, 2, 4, 8] {
                for ksplit in [1, 2, 4] {
                    let loads = cols * unroll;
                    if !(2..=8).contains(&loads) || warps % ksplit != 0 {
                        continue;
                    }
                    let threads = warps * WARP;
                    let p = KmajorParams {
                        warps,
                        cols,
                        unroll,
                        ksplit,
                        shuffle: crate::rows::shuffle_lanes(limits, WARP, threads),
                    };
                    if p.fits(limits, m) {
                        out.push(p.config());
                    }
                }
            }
        }
    }
    out
}

/// A config that fits any shape on `limits`: the rule's at 8 rows of a 2048 × 2048
/// weight (the most shared memory a config of the rule takes).
pub fn default_config(limits: &TargetLimits, dtype: DType) -> Config {
    KmajorParams::rule(limits, MAX_M, 2048, 2048, dtype)
        .0
        .config()
}

/// A one-line description of `p` over `w` of `dtype` (`gemv-kmajor template: ...`).
pub fn describe(p: &KmajorParams, dtype: DType) -> String {
    let combine = match (p.shuffle, p.parts()) {
        (1, _) => "shared memory".to_string(),
        (s, 1) => format!("shuffles across {s} lanes"),
        (s, _) => format!("shuffles across {s} lanes, then shared memory in order"),
    };
    format!(
        "gemv-kmajor template: {} warps a block, {} column(s) a warp, k of a column over {} warp(s), {}×{}-byte loads a column in flight a thread ({} elements), sums combined by {combine}",
        p.warps,
        p.cols,
        p.ksplit,
        p.unroll,
        super::LOAD_BYTES,
        vec_of(dtype)
    )
}

/// [`describe`] of a config given as one, or why it is not one.
pub fn describe_config(config: &Config, dtype: DType) -> Result<String, String> {
    let p = KmajorParams::from_config(config).map_err(|e| e.to_string())?;
    Ok(describe(&p, dtype))
}

/// The template at `m × n × k` over new buffers `A` (`[m, k]`), `W` (`[n, k]`) and `C`
/// (`[m, n]`) of `dtype` (sums in f32, rounded to `dtype` once at the store).
pub fn build(m: i64, n: i64, k: i64, dtype: DType, config: &Config) -> Result<Func, BuildError> {
    let p = KmajorParams::from_config(config)?;
    if !super::takes(m) {
        return Err(config.invalid(format!(
            "the gemv-kmajor template takes 1 to {MAX_M} rows, not {m}"
        )));
    }
    let a = te::placeholder("A", &[m, k], dtype);
    let w = te::placeholder("W", &[n, k], dtype);
    let c = te::placeholder("C", &[m, n], dtype);
    Ok(template_over("gemv_kmajor", &a, &w, &c, &p)?)
}

/// Why a template over these tensors cannot be built, as the template's error.
pub(crate) fn invalid(name: &str, what: String) -> TemplateError {
    TemplateError::Invalid {
        template: name.to_string(),
        what,
    }
}
