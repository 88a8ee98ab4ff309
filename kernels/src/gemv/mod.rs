//! The skinny-product template: `c = a · b` for an `a` of few rows (`m` ≤ [`MAX_M`]: a
//! decode step's batch of activations) and a `b` of `k × n` read once (a weight), at the
//! speed of reading `b`.
//!
//! The tiled matmul templates give each block a 64–128-row tile of `c`: at `m = 1` almost
//! all of each tile is past the matrix, and a block's loads of `b` wait behind its
//! shared-memory staging. Here nothing of `b` is staged or reused — it is streamed:
//!
//! - a block owns `bn = nt · vec` columns of `c` (all `m` rows of them): `nt` threads
//!   side by side along a row of `b` (its contiguous axis), each loading `vec`
//!   consecutive elements — 16 bytes, 8 halves or 4 floats — at once;
//! - the block's other `kt = threads / nt` thread rows split the reduction: at step `ko`
//!   thread row `kq` reads rows `ko · kt · unroll + e · kt + kq` of `b` for `e` below
//!   `unroll`, all `unroll` loads issued before the first is used (that many 16-byte
//!   loads in flight a thread, to cover the memory's latency), a warp's loads
//!   `32 / nt` rows of `nt · 16` bytes each;
//! - each thread reads the `m` elements of `a` at its row (the same address across
//!   the `nt` threads of the row: one broadcast) and keeps `m × vec` sums in registers,
//!   in f32 whatever the operands' type;
//! - the `kt` partial sums of each element of `c` are combined in a fixed order (the
//!   result does not depend on timing): butterfly shuffles across the thread rows of a
//!   subgroup where the target has them ([`GemvParams::shuffle`]), then one partial a
//!   subgroup through shared memory and halving steps behind barriers — `m` rows at a
//!   time as shared memory holds them;
//! - the sums are stored once, tested against the matrix's edges, and the caller fuses
//!   its epilogue (bias, residual, activation, cast) into that store ([`weft_ir::fusion`]).
//!
//! Every size is predicated: columns past `n` (loads off, stores off; where rows of `b`
//! are not 16-byte aligned the loads are element by element), rows of `b` past `k` in
//! the last step only. `a` and `b` may be te computes (views) that fusion inlines.

mod kernel;
pub mod kmajor;

use weft_codegen_common::TargetLimits;
use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::template::TemplateError;

use super::{BuildError, Config, ceil_div, within};

pub use kernel::{
    template_gated, template_normed, template_over, template_prefetched, template_split,
};

/// An RMS norm over the rows of the product's `a`, folded into the product
/// ([`template_normed`]): `RMSNorm(a) · b = r ⊙ ((a ⊙ γ) · b)` with `r` a factor a row.
/// The norm's output is never stored, so its rounding to the storage type goes too: `a`
/// and `γ` are read in f32 at the loads.
#[derive(Clone, Debug)]
pub struct RowNorm {
    /// The scale `γ`, `[k]` (a te placeholder, or a compute that fusion inlines).
    pub gamma: Buffer,
    /// Added to the mean of the squares before the square root.
    pub epsilon: f32,
}

/// The most rows of `a` the template takes: its registers hold `m × vec` sums a thread
/// (64 floats at 8 rows of halves), and past 8 rows the tiled templates' reuse of each
/// loaded element of `b` across rows starts to pay (a 16-row tile of the fp16 template
/// is one matrix-unit tile). A decode step's batch of up to 8 sequences is under it.
pub const MAX_M: i64 = 8;

/// Bytes each thread loads of `b` at once: 128-bit loads, the widest every target has.
pub const LOAD_BYTES: i64 = 16;

/// Shared memory the cross-subgroup combine may use at once (bytes): `m` rows are
/// combined in as many rounds as this needs.
pub const COMBINE_BYTES: i64 = 16 * 1024;

/// The fewest rows of `b` a part of a split reduction takes ([`split_rule`]): at the
/// rule's 256 thread rows of 4 loads each, 512 rows still give every thread 2 loads in
/// flight; fewer would leave thread rows with nothing to load.
pub const MIN_SPLIT_ROWS: i64 = 512;

/// The most parts [`split_rule`] and a forced split take.
pub const MAX_SPLITS: i64 = 64;

/// Rows of `b` a part of a `k`-long reduction split in `splits` takes (the last part
/// the rest): `ceil(k / splits)`.
pub fn split_rows(k: i64, splits: i64) -> i64 {
    ceil_div(k, splits.max(1))
}

/// Whether `k` splits in `splits` parts ([`split_rows`] each) with none empty.
pub fn split_fits(k: i64, splits: i64) -> bool {
    (1..=MAX_SPLITS).contains(&splits) && (splits - 1) * split_rows(k, splits) < k
}

/// The rule's parts for an `n`-column, `k`-long product under `p` on `limits`, with why
/// (`None`: whole). Split where the target's blocks can hand each other results
/// ([`TargetLimits::device_fence`]) and the column blocks are fewer than the
/// multiprocessors: the fewest parts, a power of two, that give at least as many blocks
/// as multiprocessors, halved while a part would take fewer than [`MIN_SPLIT_ROWS`]
/// rows. Measured on the H200 (sixth session): 64–80 blocks of 1024 threads streamed
/// ~2 TB/s where 352 reached ~3 TB/s; narrower blocks were slower, and a second
/// (summing) kernel cost more than splitting saved.
pub fn split_rule(
    limits: &TargetLimits,
    p: &GemvParams,
    n: i64,
    k: i64,
    dtype: DType,
) -> Option<(i64, String)> {
    let blocks = ceil_div(n, p.nt * vec_of(dtype));
    let sms = limits.multiprocessors.max(1) as i64;
    if !limits.device_fence || blocks >= sms {
        return None;
    }
    let mut sk = 1;
    while blocks * sk < sms && sk < MAX_SPLITS {
        sk *= 2;
    }
    while sk > 1 && (split_rows(k, sk) < MIN_SPLIT_ROWS || !split_fits(k, sk)) {
        sk /= 2;
    }
    (sk > 1).then(|| {
        let why = format!(
            "{blocks} blocks < {sms} multiprocessors: {} blocks of {} rows of b",
            blocks * sk,
            split_rows(k, sk)
        );
        (sk, why)
    })
}

/// What a skinny product does before it waits for the kernel launched before it, on
/// targets where that wait is a statement of its own
/// ([`TargetLimits::grid_dependency`]: CUDA's programmatic dependent launch); the model
/// has the kernel before each product that places its wait let it launch early.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lead {
    /// Nothing placed: the product waits at its start, as every kernel does, and the
    /// kernel before it triggers nothing.
    #[default]
    Off,
    /// The wait placed first, nothing before it: the blocks are placed while the kernel
    /// before still runs and start the moment it ends.
    Wait,
    /// Each thread prefetches into L2 every 16-byte piece of `b` it will load, then
    /// waits.
    Rows,
    /// As [`Lead::Rows`], one prefetch a 32-byte sector (the threads whose piece
    /// starts one), then the wait.
    Sectors,
    /// The first step's loads of `b` into the thread's registers, then the wait: only
    /// where `b` is a constant of the run (no kernel writes it; the caller says so, and
    /// marks its parameter [`weft_ir::kernel::Access::Constant`] for the emitters'
    /// check), so that those loads are in flight while the kernel before finishes.
    Loads,
}

impl Lead {
    /// The names the environment's `WEFT_PREFETCH` takes, in order of the variants.
    pub const NAMES: [(&'static str, Lead); 5] = [
        ("0", Lead::Off),
        ("wait", Lead::Wait),
        ("1", Lead::Rows),
        ("sectors", Lead::Sectors),
        ("loads", Lead::Loads),
    ];

    /// The lead named `name` ([`Lead::NAMES`]).
    pub fn parse(name: &str) -> Option<Lead> {
        Lead::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, l)| *l)
    }

    /// The lead a kernel over `b` takes: a prefetch needs `b` stored (a placeholder), so
    /// over a view that fusion inlines [`Lead::Rows`] and [`Lead::Sectors`] place the
    /// wait alone ([`Lead::Wait`]).
    pub fn over(self, b: &Buffer) -> Lead {
        match self {
            Lead::Rows | Lead::Sectors | Lead::Loads if b.producer().is_some() => Lead::Wait,
            other => other,
        }
    }

    /// What the schedule line says of it (empty for [`Lead::Off`]).
    pub fn describe(self) -> &'static str {
        match self {
            Lead::Off => "",
            Lead::Wait => "; waits first thing, launched while the kernel before it runs",
            Lead::Rows => {
                "; its rows of b prefetched into L2 before it waits for the kernel before it"
            }
            Lead::Sectors => {
                "; its rows of b prefetched into L2 (a prefetch a 32-byte sector) before it waits for the kernel before it"
            }
            Lead::Loads => {
                "; its first step's loads of b (a constant) issued before it waits for the kernel before it"
            }
        }
    }
}

/// The template's parameters (its space's axes).
pub const PARAMS: [(&str, &str); 4] = [
    ("threads", "threads per block"),
    ("nt", "threads side by side along a row of b"),
    (
        "unroll",
        "rows of b each thread loads before using the first",
    ),
    (
        "shuffle",
        "lanes the combine shuffles across (1: shared memory only)",
    ),
];

/// A checked config of the skinny-product template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GemvParams {
    /// Threads per block (a power of two).
    pub threads: i64,
    /// Threads along a row of `b` (a power of two, at most `threads`).
    pub nt: i64,
    /// Rows of `b` a thread has in flight each step.
    pub unroll: i64,
    /// Lanes of a subgroup the combine shuffles across (a power of two; 1: none).
    pub shuffle: i64,
}

impl GemvParams {
    /// `config`'s parameters, checked.
    pub fn from_config(config: &Config) -> Result<GemvParams, BuildError> {
        config.known(&PARAMS, "gemv")?;
        let p = GemvParams {
            threads: config.value("threads")?,
            nt: config.value("nt")?,
            unroll: config.value("unroll")?,
            shuffle: config.value("shuffle")?,
        };
        let pow2 = |v: i64| v >= 1 && v & (v - 1) == 0;
        let reason = if !pow2(p.threads) || p.threads < 32 {
            Some("threads must be a power of two, at least 32")
        } else if !pow2(p.nt) || p.nt > p.threads {
            Some("nt must be a power of two up to threads")
        } else if !(1..=16).contains(&p.unroll) {
            Some("unroll must be 1 to 16")
        } else if !pow2(p.shuffle) || p.shuffle > 32 {
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
        Config::of(&PARAMS, [self.threads, self.nt, self.unroll, self.shuffle])
    }

    /// Thread rows splitting the reduction.
    pub fn kt(&self) -> i64 {
        self.threads / self.nt
    }

    /// The stated rule's parameters for an `m × n × k` product whose `b` holds elements
    /// of `dtype` on `limits`, with why. Fitted on the H200 in two steps
    /// (measurements/h200-2026-11-29e). A sweep of one product (`weft sweep --op gemv-f16
    /// --shapes llama-decode --trials`, 64 configs) keeps an 8–23 MB weight in the 50 MB
    /// L2 between runs; there 512 threads with 4 loads in flight beat 256 with 8 at every
    /// one-row product, by 1.1–1.5×. A decode step reads each weight from memory once:
    /// timed as whole steps (4 TinyLlama layers, 711 MiB of weights, `WEFT_GEMV`
    /// overriding the rule), 1024 threads with 4 loads in flight and 64-byte segments ran
    /// the step in 385 µs, against 407 µs at 512 threads and 435 µs at the first rule
    /// (256 threads, 8 loads, 32-byte segments); 16-byte segments (`nt` = 1) ran 492 µs.
    /// Past 2 rows a thread's `m × vec` sums would not fit 64 registers (1024 threads
    /// share 64 K): 512 threads. The row segment a block is 4 threads (64 bytes, two DRAM
    /// sectors) unless 8 (a whole 128-byte line) still gives every multiprocessor two
    /// blocks — the vocabulary's 32000 columns.
    ///
    /// One wave: where one or two rows' 1024-thread blocks of 64-byte segments would be
    /// more than two a multiprocessor (TinyLlama's gate/up: 352 blocks on the H200's 132),
    /// the last ones ran as a second, partial wave (Nsight Compute: 1.33 waves, the
    /// multiprocessors busy 75% of the kernel); 512 threads with 8 loads in flight read
    /// the same 1024 rows a step and every block is resident at once. Measured on the
    /// H200 (twelfth session, `measurements/h200-2026-11-30c/call4`, `WEFT_GEMV` on the
    /// gate/up products alone): the 4-layer decode step 233.2 → 218.7 µs, the 22-layer
    /// one 1.074 → 0.995 ms; 176 blocks of 1024 threads and 128-byte segments ran 221.2,
    /// 256 threads 238.0, 1024 threads with 8 loads 232.3. The narrow products (64–80
    /// blocks: one wave whatever their size) gained nothing from other configs there.
    /// The vocabulary's head (500 blocks of 128-byte segments) takes the same one wave:
    /// 512 threads, 8 loads (thirteenth session, `measurements/h200-2026-11-30d/call2`,
    /// three alternated rounds of the 4-layer step: 210.5 → 209.5 µs).
    ///
    /// Few columns over several rows: past 2 rows of 16-bit elements, where 64-byte
    /// segments give fewer blocks than the GPU has multiprocessors, 256 threads a block
    /// on 16-byte segments (`nt` = 1: 8 columns a block, four times the blocks). Measured
    /// on the H200 (sixteenth session, `measurements/h200-2026-12-01/call5`, three
    /// alternated rounds, `WEFT_GEMV` on the products of 2048 and 2560 columns): the
    /// TinyLlama-shaped 4-layer decode step at batch 8 512.4 → 476.4 µs; the CNN
    /// classifiers' 8-row heads (`[8, 1000]` from 2048: 32 blocks by the rule before)
    /// 7.9 → 6.1 µs alone, ResNet-50 at batch 8 627 → 623 µs and Inception-v3 1254 → 1250
    /// (fifteenth session, `measurements/h200-2026-11-30f`, call 6).
    pub fn rule(limits: &TargetLimits, m: i64, n: i64, dtype: DType) -> (GemvParams, String) {
        let vec = vec_of(dtype);
        let sms = limits.multiprocessors.max(1) as i64;
        let want = 2 * sms;
        if m > 2 && vec == 8 && ceil_div(n, 4 * vec) < sms {
            let threads = 256.min(limits.max_threads_per_block as i64).max(32);
            let p = GemvParams {
                threads,
                nt: 1,
                unroll: 4,
                shuffle: crate::rows::shuffle_lanes(limits, 32, threads),
            };
            let why = format!(
                "rule: {m} row(s) ≤ {MAX_M}: b streamed, {vec} columns a block, {} blocks of {threads} threads (64-byte segments would give {} blocks, fewer than the {sms} multiprocessors)",
                ceil_div(n, vec),
                ceil_div(n, 4 * vec),
            );
            return (p, why);
        }
        let nt = if ceil_div(n, 8 * vec) >= want { 8 } else { 4 };
        let one_wave = m <= 2 && ceil_div(n, nt * vec) > want;
        let (threads, unroll) = match (m <= 2, one_wave) {
            (true, false) => (1024, 4),
            (true, true) => (512, 8),
            (false, _) => (512, 4),
        };
        let threads = threads.min(limits.max_threads_per_block as i64).max(32);
        let shuffle = crate::rows::shuffle_lanes(limits, 32, threads);
        let p = GemvParams {
            threads,
            nt,
            unroll,
            shuffle,
        };
        let blocks = ceil_div(n, nt * vec);
        let mut why = format!(
            "rule: {m} row(s) ≤ {MAX_M}: b streamed, {} columns a block, {blocks} blocks",
            nt * vec,
        );
        if one_wave {
            why.push_str(&format!(
                ", {threads} threads with {unroll} loads in flight so that all are resident at once ({blocks} > 2 blocks of 1024 a multiprocessor on {sms})"
            ));
        }
        (p, why)
    }

    /// The stated rule's parameters for [`template_gated`] storing `n` columns (each half
    /// of `b`'s `2·n`), with why: the rule's for a product of `n` columns, with twice its
    /// threads a row segment, so that each half loads the segment the rule would (64 or
    /// 128 bytes) and the blocks are the rule's for `n` — TinyLlama's gate/up at one row:
    /// 1024 threads, 8 a segment, 176 blocks (the config the twelfth session timed for the
    /// unfused gate/up at 221.2 µs a 4-layer step, against the rule's 218.7). Not timed
    /// as a gated product yet.
    pub fn gated_rule(limits: &TargetLimits, m: i64, n: i64, dtype: DType) -> (GemvParams, String) {
        let (p, why) = GemvParams::rule(limits, m, n, dtype);
        let nt = (p.nt * 2).min(p.threads);
        // Wider segments can leave no thread rows to shuffle across (a run of 8 lanes
        // holds one row of 8 threads): the combine's partials then all go through shared
        // memory, a row of `bn` sums (and a sum of squares) a thread row. Fewer threads
        // where one row of `c` would not fit [`COMBINE_BYTES`].
        let combine = |threads: i64| {
            let rows_a_run = if p.shuffle > nt { p.shuffle / nt } else { 1 };
            threads / nt / rows_a_run * (nt * vec_of(dtype) + 1) * 4
        };
        let mut threads = p.threads;
        while combine(threads) > COMBINE_BYTES && threads > 2 * nt {
            threads /= 2;
        }
        (
            GemvParams { threads, nt, ..p },
            format!(
                "{why}; gated: {threads} threads, {nt} a row segment, half the gate's and half the up projection's"
            ),
        )
    }

    /// Whether the config fits `limits` (threads and the combine's shared memory).
    pub fn fits(&self, limits: &TargetLimits) -> bool {
        within(self.threads, limits.max_threads_per_block)
            && within(COMBINE_BYTES, limits.max_shared_bytes)
    }

    /// Builds `c = RMSNorm(a) · b` over given tensors where `norm` is given, else `c = a ·
    /// b` (see [`template_normed`]).
    pub fn template_normed(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        c: &Buffer,
        norm: Option<&RowNorm>,
    ) -> Result<Func, TemplateError> {
        template_normed(name, a, b, c, self, norm)
    }

    /// Builds `c = silu(s[.., :n]) · s[.., n:]` of the product `s = RMSNorm(a) · b` (or
    /// `a · b`), `b` the gate's and up projection's columns side by side (see
    /// [`template_gated`]).
    pub fn template_gated(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        c: &Buffer,
        norm: Option<&RowNorm>,
    ) -> Result<Func, TemplateError> {
        template_gated(name, a, b, c, self, norm)
    }

    /// Builds `c = RMSNorm(a) · b` (or `c = a · b`), the reduction in `splits` parts whose
    /// last sums (see [`template_split`]).
    pub fn template_split(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        c: &Buffer,
        norm: Option<&RowNorm>,
        splits: i64,
    ) -> Result<Func, TemplateError> {
        template_split(name, a, b, c, self, norm, splits)
    }

    /// Builds [`GemvParams::template_split`]'s kernel doing `lead` before the kernel's
    /// wait for the one before it (see [`template_prefetched`]).
    #[allow(clippy::too_many_arguments)]
    pub fn template_prefetched(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        c: &Buffer,
        norm: Option<&RowNorm>,
        splits: i64,
        lead: Lead,
    ) -> Result<Func, TemplateError> {
        template_prefetched(name, a, b, c, self, norm, splits, lead)
    }

    /// Builds `c = a · b` over given tensors (see [`template_over`]).
    pub fn template_over(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        c: &Buffer,
    ) -> Result<Func, TemplateError> {
        template_over(name, a, b, c, self)
    }
}

/// Elements of `dtype` in one [`LOAD_BYTES`] load.
pub fn vec_of(dtype: DType) -> i64 {
    LOAD_BYTES / dtype.bytes().max(1) as i64
}

/// Whether a product of `m` rows takes this template.
pub fn takes(m: i64) -> bool {
    (1..=MAX_M).contains(&m)
}

/// A one-line description of `p` over `b` of `dtype` (`gemv template: ...`).
pub fn describe(p: &GemvParams, dtype: DType) -> String {
    let combine = if p.shuffle > p.nt {
        format!("shuffles across {} lanes, then shared memory", p.shuffle)
    } else {
        "shared memory".to_string()
    };
    format!(
        "gemv template: {} threads, {} columns a block ({}×{}-byte loads a row), {} loads in flight a thread, sums combined by {combine}",
        p.threads,
        p.nt * vec_of(dtype),
        p.nt,
        LOAD_BYTES,
        p.unroll,
    )
}

/// The bytes one run of an `m × n × k` product reads and writes: `b`, `a` and `c` once
/// (the bound a streaming kernel's time is judged against).
pub fn bytes_moved(m: i64, n: i64, k: i64, operand: DType, out: DType) -> i64 {
    let e = operand.bytes() as i64;
    k * n * e + m * k * e + m * n * out.bytes() as i64
}

/// The template's space on `limits` (independent of the shape): 64 to 1024 threads, 1 to
/// 8 threads a row, 2 to 8 loads in flight a thread, the combine shuffling across as
/// many lanes as the target's subgroups allow.
pub fn space(limits: &TargetLimits) -> Vec<Config> {
    let mut out = Vec::new();
    for threads in [64, 128, 256, 512, 1024] {
        for nt in [1, 2, 4, 8] {
            for unroll in [2, 4, 8] {
                let shuffle = crate::rows::shuffle_lanes(limits, 32, threads);
                let p = GemvParams {
                    threads,
                    nt,
                    unroll,
                    shuffle,
                };
                if p.fits(limits) {
                    out.push(p.config());
                }
            }
        }
    }
    out
}

/// The rule's config at a one-row product of 2048 columns: one that fits any shape.
pub fn default_config(limits: &TargetLimits, dtype: DType) -> Config {
    GemvParams::rule(limits, 1, 2048, dtype).0.config()
}

/// [`describe`] of a config given as one, or why it is not one.
pub fn describe_config(config: &Config, dtype: DType) -> Result<String, String> {
    let p = GemvParams::from_config(config).map_err(|e| e.to_string())?;
    Ok(describe(&p, dtype))
}

/// The template at `m × n × k` over new buffers `A`, `B`, `C` of `dtype` (sums in f32,
/// rounded to `dtype` once at the store).
pub fn build(m: i64, n: i64, k: i64, dtype: DType, config: &Config) -> Result<Func, BuildError> {
    let p = GemvParams::from_config(config)?;
    if !takes(m) {
        return Err(config.invalid(format!(
            "the gemv template takes 1 to {MAX_M} rows, not {m}"
        )));
    }
    let a = te::placeholder("A", &[m, k], dtype);
    let b = te::placeholder("B", &[k, n], dtype);
    let c = te::placeholder("C", &[m, n], dtype);
    Ok(template_over("gemv", &a, &b, &c, &p)?)
}
