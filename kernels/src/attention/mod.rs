//! Fused attention (flash-attention style): `y = softmax(scale · Q·Kᵀ + mask) · V` for
//! each of `bh` heads, one kernel, the scores never written to global memory.
//!
//! A block takes `bq` query rows of one head (`blockIdx.x` the row tile, `blockIdx.y`
//! the head) and walks the keys `bkv` at a time, keeping for each row the running
//! maximum `m` and sum `l` of the online softmax and the unnormalized output `O` (f32,
//! in shared memory):
//!
//! ```text
//! Q_s = Q[q0:q0+bq]                                   # once, zero outside
//! for j0 in range(0, t, bkv):                         # causal: up to the block's last row
//!     K_s, V_s = K[j0:j0+bkv], V[j0:j0+bkv]
//!     S_s = Q_s · K_sᵀ                                # warps on matrix units (mma > 0),
//!                                                     # or threads on CUDA cores
//!     for each row (lr threads a row):
//!         s = scale · S_s[r] + mask[r, j0:]           # masked: the most negative f32
//!         m_new = max(m, max(s));  p = exp(s − m_new);  P_s[r] = p
//!         α = exp(m − m_new);  l = α·l + Σp;  O[r] *= α;  m = m_new
//!     O += P_s · V_s                                  # warps: O's rows as accumulators
//! y = O / l
//! ```
//!
//! On matrix units (`mma` = F > 0, f16 operands) warp `w` owns rows `w·bq/warps ..` of
//! the tile: its Q fragments stay in registers for the whole loop, `S = Q·Kᵀ` reads
//! `K_s` as a column-major B operand, and `O` is loaded into accumulators from `O_s`,
//! multiplied into and stored back each step (fragments are opaque on WGSL and MSL, so
//! the per-row rescaling happens in shared memory, between the two products). Where the
//! target's fragments expose their elements (CUDA), `rg` = 1 keeps S, P and O in the
//! warps' registers instead (`registers.rs`: FlashAttention-2's form). With
//! `mma` = 0 the same tiles are multiplied by the block's threads, an element each, in
//! f32: the configuration for targets without matrix units (plain WebGPU) and for f32
//! operands.
//!
//! Rows and keys past the ends are zero-filled where loaded and masked where scored,
//! so any `s`, `t` and head size runs; the head size is padded to the fragment size
//! in shared memory. A causal mask (key `j` seen by query `i` where `j ≤ i`) is computed,
//! not loaded, and key tiles wholly after a block's last row are skipped.

mod kernel;
mod registers;
mod rule;
mod split;

pub use split::{Combine, MAX_SPLITS, SPLIT_WARPS};

/// Halves of padding per f16 shared row (16 bytes: rows stay aligned for `ldmatrix` and
/// start in different banks); floats per f32 row.
pub(super) const PAD_F16: i64 = 8;
pub(super) const PAD_F32: i64 = 4;

/// The most negative finite f32: a masked score. Finite, so that a row whose every score
/// is masked still has a maximum (and WGSL, which has no infinities, can write it).
pub(super) const MASKED: f32 = f32::MIN;

use weft_codegen_common::TargetLimits;
use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::template::{Template, TemplateError};

use super::{BuildError, Config, ceil_div, split_k};

/// The template's parameters, in order, with their meaning.
pub const PARAMS: &[(&str, &str)] = &[
    (
        "mma",
        "matrix-unit tile: 16 (CUDA m16n16k16, cooperative matrices), 8 (simdgroup matrices), 0 (CUDA cores, f32)",
    ),
    ("bq", "query rows a block takes (16, 32, 64 or 128)"),
    ("bkv", "keys a step of the loop takes (16, 32, 64 or 128)"),
    (
        "w",
        "warps a block (1, 2, 4 or 8); on matrix units each owns bq / w rows, a multiple of mma",
    ),
    (
        "cs",
        "causal masks: 1 skips the key tiles after a block's last query row (a branch around barriers, alike for the whole block; WGSL's uniformity analysis refuses it), 0 computes and masks them",
    ),
    (
        "rg",
        "1 keeps the scores, probabilities and output rows in the warps' registers (element-wise fragment operations: CUDA's mma.sync); 0 passes them through shared memory between the products",
    ),
    (
        "st",
        "key/value stages in shared memory with `rg` = 1: 2 fetches the next step's K and V tiles (cp.async on CUDA) while this step computes, one barrier a step; 1 loads, then computes",
    ),
    (
        "tp",
        "two passes over the keys with `rg` = 0 on matrix units: 1 finds each row's maximum and sum first, then accumulates the normalised P · V in the matrix units' accumulators across the steps (Q · Kᵀ twice, no rescaling through shared memory); 0 or absent: one pass, the online softmax rescaling the output through shared memory",
    ),
    (
        "sh",
        "with `rg` = 0: 1 combines each row's maximum and sum over the row's threads by subgroup shuffles (where the target has subgroups), 0 or absent through shared memory and a barrier each",
    ),
    (
        "kv",
        "with `rg` = 0 in one pass: 1 loads V over K in one shared tile once the scores are taken (during the softmax), so a key step of twice the keys fits; 0 or absent: K and V in tiles of their own, loaded together",
    ),
    (
        "sk",
        "split-KV: the keys split in this many chunks of whole key steps (dividing them), a block each, and a second kernel combining the chunks' partial softmax states (1 or absent: none; one pass, `rg` = 0)",
    ),
];

/// How scores are masked beyond the key length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Masking {
    /// Every key is seen (an additive mask buffer may still apply).
    None,
    /// Query `i` sees keys `j ≤ i` (top-left aligned, as ONNX's `is_causal`).
    Causal,
}

/// The buffers and constants of one attention: `q` `[bh, s, d]`, `k` `[bh, t, d]`, `v`
/// `[bh, t, dv]`, an optional additive `mask` `[bh, s, t]`, and `y` `[bh, s, dv]`.
/// Any of them may be a te view: fusion inlines its producers into the loads (`q`, `k`,
/// `v`, `mask`) or the stores (`y`).
pub struct Operands<'a> {
    pub q: &'a Buffer,
    pub k: &'a Buffer,
    pub v: &'a Buffer,
    pub mask: Option<&'a Buffer>,
    pub y: &'a Buffer,
    /// The scores' factor (`1/√d` usually).
    pub scale: f64,
    pub masking: Masking,
}

impl Operands<'_> {
    /// Heads, query rows, head size of Q and K, keys, head size of V: `(bh, s, d, t, dv)`
    /// read from `q`, `k` and `v`'s shapes.
    pub fn dims(&self) -> (i64, i64, i64, i64, i64) {
        let (q, k, v) = (self.q.shape(), self.k.shape(), self.v.shape());
        (q[0], q[1], q[2], k[1], v[2])
    }
}

/// A config of the attention template, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttnParams {
    /// The matrix-unit tile `F` (0: CUDA cores).
    pub mma: i64,
    pub bq: i64,
    pub bkv: i64,
    pub warps: i64,
    /// Under a causal mask, skip the key tiles wholly after the block's last row.
    pub skip: bool,
    /// S, P and O stay in registers (FlashAttention-2's form; `mma` = 16 on a target
    /// whose fragments expose their elements).
    pub regs: bool,
    /// K/V tiles in shared memory: 2 fetches the next key step's tiles while this one
    /// computes (register form only), 1 loads and then computes.
    pub stages: i64,
    /// Two passes over the keys (shared-memory form on matrix units, `tp` = 1): each
    /// row's maximum and sum first, then the output, normalised as it accumulates in the
    /// matrix units' accumulators, which opaque fragments (cooperative matrices,
    /// simdgroup matrices) cannot rescale in registers.
    pub two_pass: bool,
    /// The shared-memory form's row statistics (each row's maximum and sum over its
    /// [`AttnParams::threads_per_row`] threads) combined by subgroup shuffles, not
    /// through shared memory and a barrier each (`sh` = 1).
    pub shuffle: bool,
    /// K and V share one shared-memory tile in the one-pass shared-memory form (`kv` =
    /// 1): V is loaded over K once the scores are taken, while the softmax runs, so that
    /// a step of twice the keys fits the same memory (128 keys at 16 rows in 48 KiB).
    pub shared_kv: bool,
}

impl AttnParams {
    /// Reads and checks a config.
    pub fn from_config(config: &Config) -> Result<AttnParams, BuildError> {
        config.known(PARAMS, "attention")?;
        let p = AttnParams {
            mma: config.value("mma")?,
            bq: config.value("bq")?,
            bkv: config.value("bkv")?,
            warps: config.value("w")?,
            skip: config.get("cs").unwrap_or(0) == 1,
            regs: config.get("rg").unwrap_or(0) == 1,
            stages: config.get("st").unwrap_or(1),
            two_pass: config.get("tp").unwrap_or(0) == 1,
            shuffle: config.get("sh").unwrap_or(0) == 1,
            shared_kv: config.get("kv").unwrap_or(0) == 1,
        };
        for key in ["cs", "rg", "tp", "sh", "kv"] {
            if let Some(v) = config.get(key).filter(|c| ![0, 1].contains(c)) {
                return Err(config.invalid(format!("`{key}` = {v} must be 0 or 1")));
            }
        }
        p.check().map_err(|r| config.invalid(r))?;
        Ok(p)
    }

    fn check(&self) -> Result<(), String> {
        let AttnParams {
            mma,
            bq,
            bkv,
            warps,
            ..
        } = *self;
        if ![0, 8, 16].contains(&mma) {
            return Err(format!("`mma` = {mma} must be 0, 8 or 16"));
        }
        if ![16, 32, 64, 128].contains(&bq) {
            return Err(format!("`bq` = {bq} must be 16, 32, 64 or 128"));
        }
        if ![16, 32, 64, 128].contains(&bkv) {
            return Err(format!("`bkv` = {bkv} must be 16, 32, 64 or 128"));
        }
        if ![1, 2, 4, 8].contains(&warps) {
            return Err(format!("`w` = {warps} must be 1, 2, 4 or 8"));
        }
        if mma > 0 && warps * mma <= bq && (bq / warps) % mma != 0 {
            return Err(format!(
                "`bq` / `w` = {bq} / {warps} rows a warp must be a multiple of `mma` = {mma}"
            ));
        }
        // More warps than fragment rows: the shared-memory form splits the columns.
        let (_, cols) = self.warp_grid();
        if cols > 1 && self.regs {
            return Err(format!(
                "`w` = {warps} warps over {} fragment rows split the columns, which the register form (`rg` = 1) does not; at most {} warps",
                bq / mma,
                bq / mma
            ));
        }
        if cols > 1 && (bkv / mma) % cols != 0 {
            return Err(format!(
                "`w` = {warps} warps over {} fragment rows split each key step's {} score fragments {cols} ways",
                bq / mma,
                bkv / mma
            ));
        }
        if self.regs && mma != 16 {
            return Err(format!(
                "`rg` = 1 keeps the tiles in mma.sync's 16×16 fragments; `mma` = {mma}"
            ));
        }
        if ![1, 2].contains(&self.stages) {
            return Err(format!("`st` = {} must be 1 or 2", self.stages));
        }
        if self.stages == 2 && !self.regs {
            return Err(
                "`st` = 2 double-buffers the key/value tiles of the register form; `rg` = 0"
                    .to_string(),
            );
        }
        if self.two_pass && (self.regs || mma == 0) {
            return Err(
                "`tp` = 1 is the shared-memory form's on matrix units (`rg` = 0, `mma` > 0)"
                    .to_string(),
            );
        }
        if self.shuffle && (self.regs || self.threads_per_row() == 1) {
            return Err(format!(
                "`sh` = 1 shuffles a row's statistics among its threads in the shared-memory form (`rg` = 0, more than one thread a row); here `rg` = {} with {} thread(s) a row",
                self.regs as i64,
                self.threads_per_row()
            ));
        }
        if self.shared_kv && (self.regs || self.two_pass) {
            return Err(
                "`kv` = 1 shares the K/V tile in the one-pass shared-memory form (`rg` = 0, `tp` = 0)"
                    .to_string(),
            );
        }
        if self.threads_per_row() > bkv {
            return Err(format!(
                "{} threads a row over `bkv` = {bkv} keys: fewer keys than threads",
                self.threads_per_row()
            ));
        }
        Ok(())
    }

    pub fn threads(&self) -> i64 {
        self.warps * 32
    }

    /// The warps as a grid over the tile: `(rows, columns)`. On matrix units in the
    /// shared-memory form a block may have more warps than the query tile has rows of
    /// fragments (`w` > `bq` / `mma`): then each warp owns one fragment row and the
    /// warps sharing it split the columns — of the scores (the keys of a step) and of
    /// the output (the head size). Few rows (BERT's 128 tokens: 96 tiles of 16 rows over
    /// 132 multiprocessors) then still give a block several warps. Otherwise `(w, 1)`.
    pub fn warp_grid(&self) -> (i64, i64) {
        if self.mma > 0 && self.warps * self.mma > self.bq {
            let rows = (self.bq / self.mma).max(1);
            (rows, self.warps / rows)
        } else {
            (self.warps, 1)
        }
    }

    /// Threads sharing a row in the softmax step.
    pub fn threads_per_row(&self) -> i64 {
        (self.threads() / self.bq).max(1)
    }

    /// A head size padded to the fragments (`mma`), as the shared tiles hold it.
    pub fn padded(&self, d: i64) -> i64 {
        if self.mma > 0 {
            ceil_div(d, self.mma) * self.mma
        } else {
            d
        }
    }

    /// Shared bytes at head sizes `d` (Q, K) and `dv` (V, the output), with f16 operands
    /// (kept in f16 tiles) or f32 ones.
    pub fn shared_bytes(&self, d: i64, dv: i64, f16: bool) -> i64 {
        let (dp, dvp) = (self.padded(d), self.padded(dv));
        let (es, pad) = if f16 { (2, PAD_F16) } else { (4, PAD_F32) };
        let kv = if self.shared_kv {
            self.bkv * (dp.max(dvp) + pad)
        } else {
            self.stages * self.bkv * (dp + pad + dvp + pad)
        };
        let tiles = (self.bq * (dp + pad) + kv) * es;
        let out = self.bq * (dvp + PAD_F32) * 4;
        if self.regs {
            return tiles + out;
        }
        let scores = self.bq * (self.bkv + PAD_F32) * 4;
        let probs = if self.mma > 0 {
            self.bq * (self.bkv + PAD_F16) * 2
        } else {
            0
        };
        let parts = if self.shuffle {
            0
        } else {
            2 * self.bq * self.threads_per_row() * 4
        };
        tiles + scores + probs + out + parts
    }

    /// The config (`tp` and `sh` only where they are 1: the configs of before them read
    /// the same).
    pub fn config(&self) -> Config {
        let mut c = Config::of(
            PARAMS,
            [
                self.mma,
                self.bq,
                self.bkv,
                self.warps,
                self.skip as i64,
                self.regs as i64,
                self.stages,
            ],
        );
        if self.two_pass {
            c.0.push(("tp".to_string(), 1));
        }
        if self.shuffle {
            c.0.push(("sh".to_string(), 1));
        }
        if self.shared_kv {
            c.0.push(("kv".to_string(), 1));
        }
        c
    }

    /// Whether it fits `limits` at head sizes `d`, `dv` with f16 or f32 operands
    /// (threads, shared memory, matrix units).
    pub fn fits(&self, limits: &TargetLimits, d: i64, dv: i64, f16: bool) -> bool {
        self.fits_target(limits, d, dv, f16) && self.splits(dv)
    }

    /// Whether warps that split the columns (see [`AttnParams::warp_grid`]) split the
    /// output's fragments at head size `dv` evenly.
    pub fn splits(&self, dv: i64) -> bool {
        let (_, cols) = self.warp_grid();
        cols == 1 || (self.padded(dv) / self.mma) % cols == 0
    }

    /// [`AttnParams::fits`] but for the head size's split among the warps.
    fn fits_target(&self, limits: &TargetLimits, d: i64, dv: i64, f16: bool) -> bool {
        super::within(self.threads(), limits.max_threads_per_block)
            && super::within(self.threads(), limits.max_block_dim[0])
            && super::within(self.shared_bytes(d, dv, f16), limits.max_shared_bytes)
            && (self.mma == 0 || f16)
            && (self.mma == 0 || limits.f16_mma_sizes().contains(&self.mma))
            && !(self.skip && limits.uniform_barriers)
            && (!self.regs || limits.fragment_elements)
            && (!self.shuffle || self.shuffles_on(limits))
    }

    /// Whether `limits`' subgroups hold a row's threads (see [`AttnParams::shuffle`]).
    pub fn shuffles_on(&self, limits: &TargetLimits) -> bool {
        let lr = self.threads_per_row();
        limits
            .subgroup
            .is_some_and(|s| s.shuffle_lanes(lr as u64, self.threads() as u64) as i64 == lr)
    }
}

/// The template over given buffers ([`Operands`]) with `p`.
pub fn template_over(name: &str, ops: &Operands, p: &AttnParams) -> Result<Func, TemplateError> {
    template_split_over(name, ops, p, 1)
}

/// [`template_over`] with the keys split in `splits` chunks (split-KV, `split.rs`): two
/// kernels, the chunks' partial states in global temporaries; one kernel for 1.
pub fn template_split_over(
    name: &str,
    ops: &Operands,
    p: &AttnParams,
    splits: i64,
) -> Result<Func, TemplateError> {
    template_split_form(name, ops, p, splits, Combine::Kernel)
}

/// [`template_split_over`] with the chunks combined as `combine` says: by a second
/// kernel, or in the attention kernel by the block that arrives last at its (row tile,
/// head) (`split.rs`; for targets with a device-scope fence only, which the caller
/// checks: [`Combine::on`]).
pub fn template_split_form(
    name: &str,
    ops: &Operands,
    p: &AttnParams,
    splits: i64,
    combine: Combine,
) -> Result<Func, TemplateError> {
    let invalid = |what: String| TemplateError::Invalid {
        template: name.to_string(),
        what,
    };
    p.check().map_err(invalid)?;
    if !p.splits(ops.v.shape()[2]) {
        return Err(invalid(format!(
            "`w` = {} warps split the output's {} fragment columns {} ways",
            p.warps,
            p.padded(ops.v.shape()[2]) / p.mma.max(1),
            p.warp_grid().1
        )));
    }
    if p.mma > 0
        && [ops.q, ops.k, ops.v]
            .iter()
            .any(|x| x.dtype() != DType::F16)
    {
        return Err(invalid(format!(
            "`mma` = {} multiplies f16 operands on matrix units; these are {}, {}, {} (use mma = 0)",
            p.mma,
            ops.q.dtype(),
            ops.k.dtype(),
            ops.v.dtype()
        )));
    }
    let (bh, s, d, t, dv) = ops.dims();
    let expect = [
        ("k", ops.k.shape().to_vec(), vec![bh, t, d]),
        ("v", ops.v.shape().to_vec(), vec![bh, t, dv]),
        ("y", ops.y.shape().to_vec(), vec![bh, s, dv]),
    ];
    for (what, got, want) in expect {
        if got != want {
            return Err(invalid(format!("{what} is {got:?}, not {want:?}")));
        }
    }
    if let Some(m) = ops.mask
        && m.shape() != [bh, s, t]
    {
        return Err(invalid(format!(
            "the mask is {:?}, not {:?}",
            m.shape(),
            [bh, s, t]
        )));
    }
    let mut tpl = Template::new(name);
    for x in [ops.q, ops.k, ops.v]
        .into_iter()
        .chain(ops.mask)
        .chain([ops.y])
    {
        tpl.param(x);
    }
    if let Some(why) = split::refusal(p, splits, ceil_div(t, p.bkv)) {
        return Err(invalid(why));
    }
    if splits > 1 {
        let cut = (p, splits, ceil_div(t, p.bkv));
        let parts = split::Partials::new(&mut tpl, cut, ops.y, combine);
        kernel::add_kernel(&mut tpl, ops, p, Some(&parts));
        if parts.needs_kernel() {
            parts.add_combine(&mut tpl, ops.y);
        }
    } else if p.regs {
        registers::add_kernel(&mut tpl, ops, p);
    } else {
        kernel::add_kernel(&mut tpl, ops, p, None);
    }
    tpl.finish()
}

/// The template over new f16 buffers `Q`, `K`, `V` and `O` at `(heads, s, t, d)`,
/// scale `1/√d`, causal or not, the keys split in `splits` chunks.
pub fn template(
    (heads, s, t, d): (i64, i64, i64, i64),
    causal: bool,
    p: &AttnParams,
    splits: i64,
) -> Result<Func, TemplateError> {
    let q = te::placeholder("Q", &[heads, s, d], DType::F16);
    let k = te::placeholder("K", &[heads, t, d], DType::F16);
    let v = te::placeholder("V", &[heads, t, d], DType::F16);
    let o = te::placeholder("O", &[heads, s, d], DType::F16);
    let ops = Operands {
        q: &q,
        k: &k,
        v: &v,
        mask: None,
        y: &o,
        scale: 1.0 / (d as f64).sqrt(),
        masking: if causal {
            Masking::Causal
        } else {
            Masking::None
        },
    };
    template_split_over("attention", &ops, p, splits)
}

/// A one-line description of `p`.
pub fn describe(p: &AttnParams) -> String {
    let how = if p.regs {
        let fetch = if p.stages == 2 {
            ", keys and values double-buffered"
        } else {
            ""
        };
        format!(
            "{0}x{0}x{0} matrix fragments, scores and output in registers{fetch}",
            p.mma
        )
    } else if p.mma > 0 && p.two_pass {
        format!(
            "{0}x{0}x{0} matrix fragments, two passes (row statistics, then the normalised output)",
            p.mma
        )
    } else if p.mma > 0 {
        format!("{0}x{0}x{0} matrix fragments", p.mma)
    } else {
        "CUDA cores (f32)".to_string()
    };
    let softmax = if p.regs {
        String::new()
    } else if p.shuffle {
        format!(
            ", {} threads a row in the softmax, combined by shuffles",
            p.threads_per_row()
        )
    } else {
        format!(", {} threads a row in the softmax", p.threads_per_row())
    };
    let kv = if p.shared_kv {
        ", V over K in one tile"
    } else {
        ""
    };
    let shared_rows = match p.warp_grid().1 {
        1 => String::new(),
        cols => format!(", {cols} warps sharing each fragment row"),
    };
    format!(
        "attention template: {} query rows a block, {} keys a step, {} warps{shared_rows}, {how}{softmax}{kv}",
        p.bq, p.bkv, p.warps,
    )
}

/// The space of the (f16) op: matrix units where the target has them (its largest tile)
/// and CUDA cores,
/// query tiles of 16 to 128 rows, key steps of 16 to 128, 1 to 8 warps; each kept where
/// it fits the target at a head size of 32 (the smallest the rule is stated for, so
/// that its choice is always in the space; at larger heads the tuner drops the configs
/// whose shared memory the device refuses); causal tiles
/// skipped where the target's compiler allows the branch (`cs`).
pub fn space(limits: &TargetLimits) -> Vec<Config> {
    let mut units = vec![0];
    units.extend(limits.f16_mma_sizes().first().copied());
    let mut out = Vec::new();
    for mma in units {
        for bq in [16, 32, 64, 128] {
            for bkv in [16, 32, 64, 128] {
                for warps in [1, 2, 4, 8] {
                    for (regs, stages, two_pass, shuffle, shared_kv) in [
                        (false, 1, false, false, false),
                        (false, 1, true, false, false),
                        (false, 1, false, true, false),
                        (false, 1, true, true, false),
                        (true, 1, false, false, false),
                        (true, 2, false, false, false),
                        (false, 1, false, false, true),
                        (false, 1, false, true, true),
                    ] {
                        // A shared K/V tile where it makes room for long steps on
                        // matrix units only.
                        if shared_kv && (mma == 0 || bkv < 64) {
                            continue;
                        }
                        let p = AttnParams {
                            mma,
                            bq,
                            bkv,
                            warps,
                            skip: !limits.uniform_barriers,
                            regs,
                            stages,
                            two_pass,
                            shuffle,
                            shared_kv,
                        };
                        // The head size's split among column warps is the shape's
                        // matter (`pays`), not the space's.
                        if p.check().is_ok() && p.fits_target(limits, 32, 32, true) {
                            out.push(p.config());
                        }
                    }
                }
            }
        }
    }
    out
}

/// A config that fits whatever the shape (up to head size 128): the rule's at 16 rows
/// and keys of 128 (the smallest tiles).
pub fn op_default(limits: &TargetLimits) -> Config {
    op_rule(limits, (1, 16, 16, 128), false).0
}

/// The config with no tuning record for `hstd` (heads, query rows, keys, head size),
/// causal or not, and why: [`AttnParams::rule`] on f16 operands, or the smallest tiles
/// where no config fits the target's shared memory.
pub fn op_rule(
    limits: &TargetLimits,
    hstd: (i64, i64, i64, i64),
    causal: bool,
) -> (Config, String) {
    let masking = if causal {
        Masking::Causal
    } else {
        Masking::None
    };
    if let Some((p, splits, why)) = AttnParams::rule_split(limits, hstd, true) {
        return (split_k::split(p.config(), splits), why);
    }
    op_rule_whole(limits, hstd, masking)
}

/// [`op_rule`] without the split-KV rule: the one-kernel config (what a split is timed
/// beside).
pub fn op_rule_whole(
    limits: &TargetLimits,
    hstd: (i64, i64, i64, i64),
    masking: Masking,
) -> (Config, String) {
    match AttnParams::rule(limits, hstd, true, masking) {
        Some((p, why)) => (p.config(), why),
        None => {
            let p = AttnParams {
                mma: 0,
                bq: 16,
                bkv: 16,
                warps: 1,
                skip: false,
                regs: false,
                stages: 1,
                two_pass: false,
                shuffle: false,
                shared_kv: false,
            };
            (
                p.config(),
                "no config fits the target's shared memory; the smallest".to_string(),
            )
        }
    }
}

/// Whether a config fits at head size `d`: the space is filtered at a head size of 32;
/// at the problem's own, a config must fit the target's shared memory too.
pub fn op_fits(limits: &TargetLimits, d: i64, config: &Config) -> bool {
    AttnParams::from_config(config).is_ok_and(|p| p.fits(limits, d, d, true))
}

/// [`describe`] of a config, with its split of the keys (`sk`).
pub fn op_describe(config: &Config) -> Result<String, String> {
    let splits = split_k::parts(config).map_err(|e| e.to_string())?.1;
    AttnParams::from_config(config)
        .map(|p| describe_split(&p, splits))
        .map_err(|e| e.to_string())
}

/// [`describe`] of `p` with the keys split in `splits` chunks (two kernels).
pub fn describe_split(p: &AttnParams, splits: i64) -> String {
    describe_split_form(p, splits, Combine::Kernel)
}

/// [`describe`] of `p` with the keys split in `splits` chunks combined as `combine`
/// says.
pub fn describe_split_form(p: &AttnParams, splits: i64, combine: Combine) -> String {
    match splits {
        1 => describe(p),
        n => format!(
            "{}, keys split in {n} chunks{}",
            describe(p),
            combine.words()
        ),
    }
}

/// Builds the fused attention of `hstd` (heads, query rows, keys, head size; f16
/// `q`, `k`, `v` and output), causal or not, with `config`.
pub fn build(
    hstd: (i64, i64, i64, i64),
    causal: bool,
    config: &Config,
) -> Result<Func, BuildError> {
    let p = AttnParams::from_config(config)?;
    let splits = split_k::parts(config)?.1;
    Ok(template(hstd, causal, &p, splits)?)
}
