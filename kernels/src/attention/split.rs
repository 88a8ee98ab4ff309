//! Split-KV attention (flash-decoding): where an attention has few blocks against the
//! GPU's multiprocessors and many keys — a decode step's one query row a head, the
//! `heads / kv_heads` query heads of a KV head stacked as 8 rows, over a cache of
//! hundreds of positions: 4 blocks on a 132-multiprocessor H200 — the keys are cut into
//! `splits` chunks of whole key steps and two kernels run:
//!
//! 1. The attention kernel (the one-pass form of `kernel.rs`) over a grid of (row tiles,
//!    heads, splits): each block runs the online softmax over its chunk and writes its
//!    rows' unnormalised output `O`, maximum `m` and sum `l` (f32) to global partials.
//! 2. A combining kernel, one thread per output element: `M = maxᵢ mᵢ`,
//!    `y = Σᵢ Oᵢ · exp(mᵢ − M) / Σᵢ lᵢ · exp(mᵢ − M)`, the splits taken in order (no
//!    atomics: the same sums every run, on every target), its store the epilogue's
//!    (fusion rewrites it: heads merged back, a cast).
//!
//! The chunks are `kv_tiles / splits` key steps each, `splits` dividing the key steps:
//! no block walks a step past the keys, so a split computes exactly the tiles the
//! unsplit kernel does, and the combination is the unsplit online softmax's, regrouped.
//! A chunk whose every score is masked keeps `m` at the masked value and contributes
//! `exp(m − M) = 0` next to any chunk with a real score; a row masked everywhere gets
//! the unsplit kernel's sums (the masked keys' terms, or 0 / 0 where `-inf` masks them
//! all, which the graph's NaN guard turns to zeros as before).

use weft_codegen_common::TargetLimits;
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template};

use super::{AttnParams, MASKED};
use crate::{ceil_div, per_item};

/// The most parts the keys are split into (the split-K parameter's bound).
pub const MAX_SPLITS: i64 = crate::rule::MAX_SPLITS;

/// Threads a block of the combining kernel.
const COMBINE_THREADS: i64 = 128;

/// The global partials of the split form, and how the keys are cut.
pub(super) struct Partials {
    pub splits: i64,
    /// Key steps of each chunk.
    pub chunk_tiles: i64,
    /// Each split's unnormalised output rows, `[splits, bh, s, dv]`.
    pub out: Buffer,
    /// Each split's row maximum and sum, `[splits, bh, s, 2]`.
    pub stats: Buffer,
}

impl Partials {
    /// The temporaries of `t` for `splits` parts of `kv_tiles` key steps at `(bh, s, dv)`.
    pub(super) fn new(
        t: &mut Template,
        splits: i64,
        kv_tiles: i64,
        (bh, s, dv): (i64, i64, i64),
    ) -> Partials {
        Partials {
            splits,
            chunk_tiles: kv_tiles / splits,
            out: t.temp("attn_part_out", &[splits, bh, s, dv], DType::F32),
            stats: t.temp("attn_part_stats", &[splits, bh, s, 2], DType::F32),
        }
    }

    /// The end of kernel 1: each of the thread's `ri` rows (`row_of`: its tile row and
    /// query row) of the running output `o_s`, maximum `m_reg` and sum `l_reg` into this
    /// block's split (`blockIdx.z`) of the partials, at head `z` (`blockIdx.y`); `lr`
    /// threads a row, `lane` this thread's place among them.
    #[allow(clippy::type_complexity)]
    pub(super) fn store(
        &self,
        kb: &mut KernelBuilder,
        (o_s, m_reg, l_reg): (&Buffer, &Buffer, &Buffer),
        (ri, lr, dv, sq): (i64, i64, i64, i64),
        lane: &Expr,
        row_of: &dyn Fn(&mut KernelBuilder, &Expr) -> (Expr, Expr),
    ) {
        let (part, z) = (kb.block_z(), kb.block_y());
        kb.unroll("it", ri, |kb, it| {
            let (r, grow) = row_of(kb, &it);
            kb.serial("e", ceil_div(dv, lr), |kb, e| {
                let c = kb.let_("c", e * lr + lane.clone());
                let inside = grow.clone().lt(sq).and(c.clone().lt(dv));
                let value = o_s.at(&[r.clone(), c.clone()]);
                let at = [part.clone(), z.clone(), grow.clone(), c];
                kb.store_if(inside, &self.out, at, value);
            });
            // Every thread of the row holds its statistics; the first writes them.
            let first = grow.clone().lt(sq).and(lane.clone().eq_(0));
            for (i, reg) in [m_reg, l_reg].into_iter().enumerate() {
                let at = [part.clone(), z.clone(), grow.clone(), Expr::int(i as i64)];
                let value = reg.at(std::slice::from_ref(&it));
                kb.store_if(first.clone(), &self.stats, at, value);
            }
        });
    }

    /// Kernel 2: one thread per element of `y` (`[bh, s, dv]`) combines the splits in
    /// order and stores `y`, rounded to its type.
    pub(super) fn add_combine(&self, t: &mut Template, y: &Buffer) {
        let (bh, s, dv) = (y.shape()[0], y.shape()[1], y.shape()[2]);
        let (out, stats, splits) = (&self.out, &self.stats, self.splits);
        per_item(t, bh * s * dv, COMBINE_THREADS, |kb, idx| {
            let c = kb.let_("c", idx.clone() % dv);
            let row = kb.let_("row", idx / dv);
            let (z, i) = (kb.let_("z", row.clone() / s), kb.let_("i", row.clone() % s));
            let stat =
                |q: &Expr, k: i64| stats.at(&[q.clone(), z.clone(), i.clone(), Expr::int(k)]);
            let acc = kb.local("acc", &[3], DType::F32);
            kb.store(&acc, [0], Expr::f32(MASKED));
            kb.serial("q", splits, |kb, q| {
                kb.store(&acc, [0], acc.at(&[0]).max(stat(&q, 0)));
            });
            let top = kb.let_("m_all", acc.at(&[0]));
            kb.store(&acc, [1], Expr::f32(0.0));
            kb.store(&acc, [2], Expr::f32(0.0));
            kb.serial("q", splits, |kb, q| {
                let w = kb.let_("w", te::exp(stat(&q, 0) - top.clone()));
                let o = out.at(&[q.clone(), z.clone(), i.clone(), c.clone()]);
                kb.store(&acc, [1], acc.at(&[1]) + stat(&q, 1) * w.clone());
                kb.store(&acc, [2], acc.at(&[2]) + o * w);
            });
            let value = (acc.at(&[2]) / acc.at(&[1])).cast(y.dtype());
            kb.store(y, [z.clone(), i.clone(), c], value);
        });
    }
}

/// Why `splits` parts of `kv_tiles` key steps cannot be taken with `p`, if they cannot.
pub(super) fn refusal(p: &AttnParams, splits: i64, kv_tiles: i64) -> Option<String> {
    if !(1..=MAX_SPLITS).contains(&splits) {
        return Some(format!(
            "keys split in {splits} parts; 1 to {MAX_SPLITS} are possible"
        ));
    }
    if splits == 1 {
        return None;
    }
    if p.regs || p.two_pass {
        return Some(format!(
            "keys split in {splits} parts in the one-pass shared-memory form only (`rg` = 0, `tp` = 0)"
        ));
    }
    if kv_tiles % splits != 0 {
        return Some(format!(
            "keys split in {splits} parts must divide the {kv_tiles} key steps of {} keys",
            p.bkv
        ));
    }
    None
}

impl AttnParams {
    /// The split-KV rule for `heads` heads of `s` query rows, `t` keys and head size `d`:
    /// `Some((config, splits, why))` where one query tile holds a head's rows (64 at
    /// most), the keys are at least four times the rows (a decode step over a cache, not
    /// a prefill or self-attention, which keep their rule) and the heads give at most an
    /// eighth of the multiprocessors a block; `None` elsewhere. Measured on the H200
    /// (`weft sweep --op attention-f16 --shapes llama-decode`, measurements/h200-2026-11-29e):
    /// 4 heads of 8 rows split ran 1.63×, 1.42× and 2.33× the one-kernel rule over 191,
    /// 1152 and 2048 keys, 32 heads (a batch of 8) 0.85×, 0.40× and 0.38× — 32 blocks
    /// already stream the cache, and the split's workspace and second launch cost more.
    ///
    /// The split aims for a block per multiprocessor: `splits` is the largest divisor of
    /// the key steps up to `multiprocessors / heads` (64 at most), at the key step of 64,
    /// 32 or 16 that gives the most blocks (the larger on a tie). The blocks run on CUDA
    /// cores (f32 arithmetic, f16 operands kept f16 in shared memory), 16 query rows and
    /// two warps: a decode step's 8 rows would leave half of a 16-row fragment idle, and
    /// each block's share of the keys is small, so the kernel is a stream of K and V.
    /// Expected on an H200 (TinyLlama's decode: 4 KV heads of 191 keys, head 64, f16):
    /// the 200 KB of K and V are under a microsecond at the memory's bandwidth, so the
    /// two launches (about 3–5 µs) bound it, against 32.7 µs unsplit (4 blocks).
    pub fn rule_split(
        limits: &TargetLimits,
        (heads, s, t, d): (i64, i64, i64, i64),
        f16: bool,
    ) -> Option<(AttnParams, i64, String)> {
        let sms = limits.multiprocessors.max(1) as i64;
        let fit = |n: i64| (n.max(16) as u64).next_power_of_two() as i64;
        let bq = fit(s);
        if bq > 64 || t < 4 * s || heads * 8 > sms {
            return None;
        }
        let want = ceil_div(sms, heads).min(MAX_SPLITS);
        let mut best: Option<(AttnParams, i64)> = None;
        for bkv in [64, 32, 16] {
            let tiles = ceil_div(t, bkv);
            let Some(splits) = (2..=want.min(tiles)).rev().find(|sp| tiles % sp == 0) else {
                continue;
            };
            let mut p = AttnParams {
                mma: 0,
                bq,
                bkv,
                warps: 2,
                skip: !limits.uniform_barriers,
                regs: false,
                stages: 1,
                two_pass: false,
                shuffle: false,
                shared_kv: false,
            };
            p.shuffle = p.threads_per_row() > 1 && p.shuffles_on(limits);
            if p.check().is_err() || !p.fits(limits, d, d, f16) {
                continue;
            }
            // More blocks win; on a tie the larger step, seen first.
            if best.is_none_or(|(_, b)| splits > b) {
                best = Some((p, splits));
            }
        }
        let (p, splits) = best?;
        let why = format!(
            "rule: split-KV, {} query rows a block for {heads} heads of {s} × {t}, keys split in {splits} chunks of {} ({} blocks over {sms} multiprocessors) + a combining kernel",
            p.bq,
            ceil_div(t, p.bkv) / splits * p.bkv,
            heads * splits
        );
        Some((p, splits, why))
    }
}
