//! Split-KV attention (flash-decoding): where an attention has few blocks against the
//! GPU's multiprocessors and many keys — a decode step's one query row a head, the
//! `heads / kv_heads` query heads of a KV head stacked as 8 rows, over a cache of
//! hundreds of positions: 4 blocks on a 132-multiprocessor H200 — the keys are cut into
//! `splits` chunks of whole key steps:
//!
//! 1. The attention kernel (the one-pass form of `kernel.rs`) over a grid of (row tiles,
//!    heads, splits): each block runs the online softmax over its chunk and writes its
//!    rows' unnormalised output `O`, maximum `m` and sum `l` (f32) to global partials.
//! 2. The combination, `M = maxᵢ mᵢ`, `y = Σᵢ Oᵢ · exp(mᵢ − M) / Σᵢ lᵢ · exp(mᵢ − M)`,
//!    the splits taken in order (the same sums every run), its store the epilogue's
//!    (fusion rewrites it: heads merged back, a cast). Two forms ([`Combine`]):
//!    - a second kernel, one thread per output element (every target);
//!    - on targets with a device-scope fence (CUDA, HIP, the interpreter), in the
//!      attention kernel itself: each block fences its partials and counts itself in at
//!      its (row tile, head)'s counter, and the block that arrives last — whichever
//!      chunk it holds — combines the `splits` partials in order 0..splits with the
//!      second kernel's very arithmetic, stores `y` and resets the counter
//!      ([`crate::split_last::arrive`]). One launch instead of two, the second of
//!      which waited for the first: a decode step's attention is latency, not bytes.
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

/// How the chunks' partial states are combined into the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Combine {
    /// A second kernel, one thread per output element (every target).
    Kernel,
    /// In the attention kernel, by the block that arrives last at its (row tile, head)
    /// (targets with a device-scope fence: [`TargetLimits::device_fence`]).
    LastArrival,
}

impl Combine {
    /// Shared bytes this form adds to a chunk block of `bq` rows over `splits` chunks:
    /// none for a combining kernel, the last arrival's combination's otherwise.
    pub fn shared_bytes(self, bq: i64, splits: i64) -> i64 {
        match self {
            Combine::Kernel => 0,
            Combine::LastArrival => combine_bytes(bq, splits),
        }
    }

    /// How the chunks are combined, in a schedule's words.
    pub fn words(self) -> &'static str {
        match self {
            Combine::Kernel => " + a combining kernel",
            Combine::LastArrival => ", the last to arrive combining them",
        }
    }

    /// The form `limits` can run, `in_kernel` asking for the one-kernel form.
    pub fn on(limits: &TargetLimits, in_kernel: bool) -> Combine {
        if in_kernel && limits.device_fence {
            Combine::LastArrival
        } else {
            Combine::Kernel
        }
    }
}

/// The global partials of the split form, and how the keys are cut.
pub(super) struct Partials {
    pub splits: i64,
    /// Key steps of each chunk.
    pub chunk_tiles: i64,
    /// Each split's unnormalised output rows, `[splits, bh, s, dv]`.
    pub out: Buffer,
    /// Each split's row maximum and sum, `[splits, bh, s, 2]`.
    pub stats: Buffer,
    /// Where the last-arriving block combines ([`Combine::LastArrival`]).
    last: Option<LastArrival>,
}

/// What the last-arriving block of a (row tile, head) needs to combine its chunks.
struct LastArrival {
    /// One arrival counter per (row tile, head), `q_tiles · bh` of them.
    counters: Buffer,
    /// The output, `[bh, s, dv]` (fusion rewrites its store into the epilogue's).
    y: Buffer,
    /// Query rows a block, its threads, and the row tiles.
    bq: i64,
    threads: i64,
    q_tiles: i64,
}

/// Shared bytes the in-kernel combination adds to a block of `bq` rows over `splits`
/// chunks: each row's chunk weights and sum, and the arrival's flag.
pub(super) fn combine_bytes(bq: i64, splits: i64) -> i64 {
    4 * (bq * (splits + 1) + 1)
}

impl Partials {
    /// The temporaries of `t` for `splits` parts of `kv_tiles` key steps of `p` at the
    /// output `y` (`[bh, s, dv]`), combined as `combine` says.
    pub(super) fn new(
        t: &mut Template,
        (p, splits, kv_tiles): (&AttnParams, i64, i64),
        y: &Buffer,
        combine: Combine,
    ) -> Partials {
        let (bh, s, dv) = (y.shape()[0], y.shape()[1], y.shape()[2]);
        let q_tiles = ceil_div(s, p.bq);
        let last = (combine == Combine::LastArrival).then(|| LastArrival {
            counters: crate::split_last::counters(t, q_tiles * bh),
            y: y.clone(),
            bq: p.bq,
            threads: p.threads(),
            q_tiles,
        });
        Partials {
            splits,
            chunk_tiles: kv_tiles / splits,
            out: t.temp("attn_part_out", &[splits, bh, s, dv], DType::F32),
            stats: t.temp("attn_part_stats", &[splits, bh, s, 2], DType::F32),
            last,
        }
    }

    /// Whether the combination is a second kernel.
    pub(super) fn needs_kernel(&self) -> bool {
        self.last.is_none()
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
        if let Some(last) = &self.last {
            // Counted in at this (row tile, head); the last to arrive combines.
            let tile = kb.let_("tile", kb.block_x() + kb.block_y() * last.q_tiles);
            let tx = kb.thread_x();
            crate::split_last::arrive(kb, &last.counters, &tile, &tx, self.splits, |kb| {
                self.combine_in_block(kb, last, sq);
            });
        }
    }

    /// The last-arriving block's combination of its (row tile, head)'s `splits` chunks,
    /// in order 0..splits, with [`Partials::add_combine`]'s arithmetic (the same f32
    /// operations in the same order: the same bits): each row's maximum `M` over the
    /// chunks, their weights `exp(mᵢ − M)` and the sum `Σ lᵢ · wᵢ` once a row (a thread
    /// each, the maxima staged in shared memory by the whole block), then every element
    /// `Σ Oᵢ · wᵢ / Σ lᵢ · wᵢ` stored to `y`. Every thread of the block runs it.
    fn combine_in_block(&self, kb: &mut KernelBuilder, last: &LastArrival, sq: i64) {
        let (out, stats, splits) = (&self.out, &self.stats, self.splits);
        let (threads, dv) = (last.threads, last.y.shape()[2]);
        // The tile's rows that can exist: a single tile's are the queries'.
        let rows = if last.q_tiles == 1 { sq } else { last.bq };
        let tx = kb.thread_x();
        let q0 = kb.let_("q0_c", kb.block_x() * last.bq);
        let z = kb.block_y();
        let w_s = kb.shared("comb_w", &[rows, splits], DType::F32);
        let l_s = kb.shared("comb_l", &[rows], DType::F32);
        // `body(r, grow, ..)` for each of `items` items `idx` (`r` = `idx / per`) whose
        // query row `grow` exists, the block's threads side by side.
        let each = |kb: &mut KernelBuilder,
                    items: i64,
                    per: i64,
                    body: &dyn Fn(&mut KernelBuilder, Expr, Expr, Expr)| {
            kb.serial("e", ceil_div(items, threads), |kb, e| {
                let idx = kb.let_("idx", e * threads + tx.clone());
                let r = kb.let_("r", idx.clone() / per);
                let grow = kb.let_("grow", q0.clone() + r.clone());
                let mut inside = grow.clone().lt(sq);
                if items % threads != 0 {
                    inside = idx.clone().lt(items).and(inside);
                }
                kb.if_(inside, |kb| body(kb, r, grow, idx % per));
            });
        };
        let stat = |q: &Expr, grow: &Expr, k: i64| {
            stats.at(&[q.clone(), z.clone(), grow.clone(), Expr::int(k)])
        };
        // The chunks' maxima, every thread loading some.
        each(kb, rows * splits, splits, &|kb, r, grow, q| {
            kb.store(&w_s, [r, q.clone()], stat(&q, &grow, 0));
        });
        kb.barrier();
        // A thread a row: M, the weights (over the maxima), their sum.
        each(kb, rows, 1, &|kb, r, grow, _| {
            let acc = kb.local("acc", &[2], DType::F32);
            kb.store(&acc, [0], Expr::f32(MASKED));
            kb.serial("q", splits, |kb, q| {
                kb.store(&acc, [0], acc.at(&[0]).max(w_s.at(&[r.clone(), q])));
            });
            let top = kb.let_("m_all", acc.at(&[0]));
            kb.store(&acc, [1], Expr::f32(0.0));
            kb.serial("q", splits, |kb, q| {
                let m = w_s.at(&[r.clone(), q.clone()]);
                let w = kb.let_("w", te::exp(m - top.clone()));
                kb.store(&w_s, [r.clone(), q.clone()], w.clone());
                kb.store(&acc, [1], acc.at(&[1]) + stat(&q, &grow, 1) * w);
            });
            kb.store(&l_s, [r], acc.at(&[1]));
        });
        kb.barrier();
        // Every element: the weighted outputs over the weighted sums.
        each(kb, rows * dv, dv, &|kb, r, grow, c| {
            let acc = kb.local("acc", &[1], DType::F32);
            kb.store(&acc, [0], Expr::f32(0.0));
            kb.serial("q", splits, |kb, q| {
                let o = out.at(&[q.clone(), z.clone(), grow.clone(), c.clone()]);
                let w = w_s.at(&[r.clone(), q]);
                kb.store(&acc, [0], acc.at(&[0]) + o * w);
            });
            let value = (acc.at(&[0]) / l_s.at(&[r])).cast(last.y.dtype());
            kb.store(&last.y, [z.clone(), grow, c], value);
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

/// Warps a block of split-KV attention's chunks takes where they fit. A block's share is
/// a few key steps for a handful of query rows, one block a multiprocessor: its time is
/// its instructions issued one after another, so the more warps share them the sooner
/// it ends. Measured on the H200 (`measurements/h200-2026-11-30b`: call 3's ncu, the
/// chunk kernel with two warps issuing an instruction every 3.3 cycles a warp at 3%
/// occupancy; call 4, TinyLlama-shaped fp16 decode, 4 layers, per layer both kernels):
/// 2 / 4 / 8 warps 9.0 / 7.5 / 7.1 µs at prompt 128 and 13.2 / 10.6 / 9.9 µs at 1024; the
/// 22-layer step 1.118 → 1.071 ms with 8 (894 → 934 tokens/s).
pub const SPLIT_WARPS: i64 = 8;

impl AttnParams {
    /// `self` (a split-KV config of [`AttnParams::rule_split_form`]) with `warps` warps a
    /// block, the row statistics shuffled where a row then has several threads and the
    /// target has subgroups; `None` where that config is no config of the template or
    /// does not fit `limits` at head size `d` (with `extra` bytes of shared memory
    /// beside the tiles: the last-arriving combination's). The rule's choice of warps,
    /// and `WEFT_ATTN_SPLIT_WARPS`'s for timing others on whole models.
    pub fn with_split_warps(
        &self,
        warps: i64,
        limits: &TargetLimits,
        d: i64,
        f16: bool,
        extra: i64,
    ) -> Option<AttnParams> {
        let mut p = AttnParams { warps, ..*self };
        p.shuffle = p.threads_per_row() > 1 && p.shuffles_on(limits);
        (p.check().is_ok()
            && p.fits(limits, d, d, f16)
            && p.shared_bytes(d, d, f16) + extra <= limits.max_shared_bytes as i64)
            .then_some(p)
    }

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
    /// cores (f32 arithmetic, f16 operands kept f16 in shared memory), 16 query rows (a
    /// decode step's 8 rows would leave half of a 16-row fragment idle) and
    /// [`SPLIT_WARPS`] warps where they fit (else 4, else 2).
    /// Expected on an H200 (TinyLlama's decode: 4 KV heads of 191 keys, head 64, f16):
    /// the 200 KB of K and V are under a microsecond at the memory's bandwidth, so the
    /// two launches (about 3–5 µs) bound it, against 32.7 µs unsplit (4 blocks).
    ///
    /// This is the rule of the two-kernel form ([`Combine::Kernel`]);
    /// [`AttnParams::rule_split_form`] states the one-kernel form's.
    pub fn rule_split(
        limits: &TargetLimits,
        hstd: (i64, i64, i64, i64),
        f16: bool,
    ) -> Option<(AttnParams, i64, String)> {
        AttnParams::rule_split_form(limits, hstd, f16, Combine::Kernel)
    }

    /// [`AttnParams::rule_split`] for the chunks combined as `combine` says. Where the
    /// last-arriving block combines ([`Combine::LastArrival`]) the keys need only be
    /// twice the rows (not four times): a split no longer pays for a second launch that
    /// waits for the first (about 2 µs of the 5.6 µs the two kernels took at 4 heads ×
    /// 191 keys on the H200), only for a fence, an atomic and the last block's
    /// combination (the rows' weights, then `rows × dv × splits` products over the
    /// block's threads), so a cache of a few key steps splits too. The heads' bound
    /// stays: at 32 heads the two-kernel split lost more as the keys grew (0.85× at
    /// 191, 0.40× at 1152), the blocks' walk on CUDA cores against the unsplit kernel's
    /// matrix units, which one launch does not change. Not measured (no GPU here):
    /// `WEFT_ATTN_COMBINE=0` compiles the two kernels and this rule's two-kernel
    /// thresholds, for timing the two side by side on whole models. The block's shared
    /// memory gains the combination's ([`combine_bytes`]), which must fit too.
    pub fn rule_split_form(
        limits: &TargetLimits,
        (heads, s, t, d): (i64, i64, i64, i64),
        f16: bool,
        combine: Combine,
    ) -> Option<(AttnParams, i64, String)> {
        let sms = limits.multiprocessors.max(1) as i64;
        let fit = |n: i64| (n.max(16) as u64).next_power_of_two() as i64;
        let bq = fit(s);
        let min_keys = match combine {
            Combine::Kernel => 4 * s,
            Combine::LastArrival => 2 * s,
        };
        if bq > 64 || t < min_keys || heads * 8 > sms {
            return None;
        }
        let want = ceil_div(sms, heads).min(MAX_SPLITS);
        let mut best: Option<(AttnParams, i64)> = None;
        for bkv in [64, 32, 16] {
            let tiles = ceil_div(t, bkv);
            let Some(splits) = (2..=want.min(tiles)).rev().find(|sp| tiles % sp == 0) else {
                continue;
            };
            let base = AttnParams {
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
            let extra = combine.shared_bytes(bq, splits);
            // The most warps that fit (SPLIT_WARPS first).
            let Some(p) = [SPLIT_WARPS, 4, 2]
                .into_iter()
                .find_map(|w| base.with_split_warps(w, limits, d, f16, extra))
            else {
                continue;
            };
            // More blocks win; on a tie the larger step, seen first.
            if best.is_none_or(|(_, b)| splits > b) {
                best = Some((p, splits));
            }
        }
        let (p, splits) = best?;
        let why = format!(
            "rule: split-KV, {} query rows a block for {heads} heads of {s} × {t}, keys split in {splits} chunks of {} ({} blocks over {sms} multiprocessors){}",
            p.bq,
            ceil_div(t, p.bkv) / splits * p.bkv,
            heads * splits,
            combine.words()
        );
        Some((p, splits, why))
    }
}
