//! The attention template's stated rules: the config a shape gets with no tuning
//! record, with why.

use weft_codegen_common::TargetLimits;

use super::{AttnParams, Masking};
use crate::ceil_div;

impl AttnParams {
    /// The stated rule for `heads` heads of `s` query rows, `t` keys and head size `d`,
    /// with why: matrix units where the operands are f16 and the target has them, else
    /// CUDA cores; the largest query tile (64, 32, 16; none past the rows) that still
    /// gives every multiprocessor a block, a warp per 16 rows; 64 keys a step (32 past a
    /// head size of 64; none past the keys), fewer while shared memory does not hold the
    /// tiles. Where the fragments are opaque (cooperative and simdgroup matrices) and
    /// there are more than 128 keys, two passes (`tp` = 1) of 16 keys a step.
    ///
    /// In the register form (`rg` = 1, where the target's fragments expose their elements)
    /// a block shares each key tile among its warps and holds no score tile in shared
    /// memory, so larger tiles pay even with few blocks: the largest query tile (64 rows,
    /// four warps), and 128 keys a step where one step holds every key, or up to a head
    /// size of 64 and 512 keys while the grid has at most a block per multiprocessor (64
    /// otherwise: the output fragments take the registers, and where blocks queue a
    /// smaller tile keeps more of them resident), fewer only past the rows or keys there
    /// are.
    /// Where there is more than one key step, two stages of K and V (`st` = 2: the next
    /// step's tiles fetched while this one computes), one if two do not fit.
    /// Measured on the H100 (12 heads of 64, 2026-11-26, `h100-2026-11-26e`): 64 × 128
    /// was the fastest of the 144 configs at 128 and 512 tokens, though at 128 tokens it
    /// fills 24 of 132 multiprocessors (16 rows a block: 8% slower at 128, 19% at 512);
    /// at 2048 tokens 64 × 64 was the fastest (78.6 µs) and 64 × 128 took 101.5 µs.
    /// With the stages and base-2 scores (`h100-2026-11-26f`, 184 configs) the rule's
    /// pick was again the fastest at 512 (64 × 128, two stages: 10.1 µs) and 2048 (64 ×
    /// 64, two stages: 61.5 µs; 64 × 128 in one stage 62.6). At GPT-2's batch 8 (96
    /// heads of 512, causal: 768 blocks) 128 keys a step were not among the five fastest
    /// (64 keys in two stages 31.6 µs, the best 30.5), so past a block per multiprocessor
    /// the steps take 64 keys, unless one step of up to 128 holds them all (96 heads of
    /// 128: 6.5 µs, the best 6.1).
    ///
    /// Under a causal mask (`masking`), past 128 keys the register form steps 64 keys at
    /// a time, not 128: a block skips the key tiles wholly after its last row, and
    /// narrower tiles leave less of the diagonal's masked half computed. At 12 heads of
    /// 512, causal, 64 × 64 in two stages ran 10.05 µs and 64 × 128 11.06 µs; without the
    /// mask the two were 9.8 and 9.9 µs (`h100-2026-11-27g/attn-causal.json`).
    pub fn rule(
        limits: &TargetLimits,
        (heads, s, t, d): (i64, i64, i64, i64),
        f16: bool,
        masking: Masking,
    ) -> Option<(AttnParams, String)> {
        let mma = if f16 {
            limits.f16_mma_sizes().first().copied().unwrap_or(0)
        } else {
            0
        };
        let sms = limits.multiprocessors.max(1) as i64;
        // No tile larger than the rows or keys there are (16 at least).
        let fit = |n: i64| {
            let mut p = 16;
            while p < n {
                p *= 2;
            }
            p
        };
        if mma == 16 && limits.fragment_elements {
            let bq = [64, 32, 16]
                .into_iter()
                .find(|&b| b <= fit(s))
                .unwrap_or(16);
            // 128 keys a step while one step holds them all, or while the grid is at most
            // a block per multiprocessor (then nothing else would use the shared memory
            // that larger tiles take from resident blocks).
            let blocks = ceil_div(s, bq) * heads;
            let causal = masking == Masking::Causal;
            let wide = t <= 128 || (!causal && d <= 64 && t <= 512 && blocks <= sms);
            let start = (if wide { 128 } else { 64 }).min(fit(t));
            for bkv in [128, 64, 32, 16].into_iter().filter(|&b| b <= start) {
                // Two stages where there is a next key step to fetch, one if they do not
                // fit.
                let stages = if t > bkv { [2, 1].as_slice() } else { &[1] };
                for &st in stages {
                    let p = AttnParams {
                        mma,
                        bq,
                        bkv,
                        warps: bq / 16,
                        skip: !limits.uniform_barriers,
                        regs: true,
                        stages: st,
                        two_pass: false,
                        shuffle: false,
                        shared_kv: false,
                    };
                    if p.check().is_ok() && p.fits(limits, d, d, f16) {
                        let fetch = if st == 2 {
                            ", the next step's keys fetched while this one computes"
                        } else {
                            ""
                        };
                        let why = format!(
                            "rule: scores and output in registers, {bq} query rows a block ({} warps) for {heads} heads of {s} × {t} ({} blocks), {bkv} keys a step{fetch}",
                            p.warps,
                            ceil_div(s, bq) * heads
                        );
                        return Some((p, why));
                    }
                }
            }
        }
        // Opaque fragments (cooperative and simdgroup matrices) over more than 128 keys:
        // two passes, 16 keys a step. On Vulkan on an H100 (2026-11-27,
        // `measurements/h100-2026-11-27b/attn-vk2.txt`) they took 96 heads of 512
        // keys from 276 to 214 µs (64 rows a block), 12 heads from 53 to 40 µs, and were
        // the fastest of the space at every 512-key shape, causal or not; with 64 keys a
        // step they were slower than one pass (bq 32: 84 against 58 µs), and at 128 keys
        // one pass of 64 keys a step stayed the fastest. Metal's simdgroup matrices take
        // the same rule unmeasured (no Apple GPU is at hand).
        if let Some(found) = Self::rule_sharing_rows(limits, (heads, s, t, d), f16, mma) {
            return Some(found);
        }
        let two_pass = mma > 0 && !limits.fragment_elements && t > 128;
        let mut candidates = Vec::new();
        for bq in [64, 32, 16] {
            if bq > fit(s) {
                continue;
            }
            let warps = if mma > 0 { (bq / 16).max(1) } else { 2 };
            let start = if two_pass {
                16
            } else {
                (if d > 64 { 32 } else { 64 }).min(fit(t))
            };
            for bkv in [64, 32, 16] {
                if bkv > start {
                    continue;
                }
                let mut p = AttnParams {
                    mma,
                    bq,
                    bkv,
                    warps,
                    skip: !limits.uniform_barriers,
                    regs: false,
                    stages: 1,
                    two_pass,
                    shuffle: false,
                    shared_kv: false,
                };
                // A row's statistics by shuffles where the subgroups hold its threads, in
                // the one-pass form. In two passes on NVIDIA's Vulkan (H100, 2026-11-27g,
                // `measurements/h100-2026-11-27g`) shuffles were slower: GPT-2's 12
                // heads of 512 keys 43.0 → 44.3 µs a kernel.
                p.shuffle = !two_pass && p.threads_per_row() > 1 && p.shuffles_on(limits);
                if p.check().is_ok() && p.fits(limits, d, d, f16) {
                    candidates.push(p);
                    break;
                }
            }
        }
        let (p, blocks) = fill_the_gpu(&candidates, s, heads, sms)?;
        let why = format!(
            "rule: {} query rows a block for {} heads of {s} × {t} ({blocks} blocks over {sms} multiprocessors), {} keys a step{}{}",
            p.bq,
            heads,
            p.bkv,
            if p.two_pass {
                ", two passes (opaque fragments over more than 128 keys)"
            } else {
                ""
            },
            if p.shuffle {
                ", row statistics by subgroup shuffles"
            } else {
                ""
            }
        );
        Some((p, why))
    }

    /// The shared-memory form's rule on matrix units where warps share a fragment row
    /// ([`AttnParams::warp_grid`]): a warp row per 16 query rows and four warps sharing
    /// each (two where the key step's or the head size's fragments do not split in
    /// four), 64 keys a step (fewer where shared memory does not hold them), one pass,
    /// the rows' statistics by shuffles where the subgroups hold a row's threads; the
    /// larger query tile of 32 and 16 rows that still gives every multiprocessor a
    /// block. `None` where no such split fits (a head size of an odd number of
    /// fragments, or tiles too large for the target's shared memory).
    ///
    /// Measured on Vulkan on an H200 (2026-11-28, `measurements/h100-2026-11-28/
    /// attn-vk.json`, the 119 configs of the space at each shape): 12 heads of 128 keys
    /// 14.9 µs by the previous rule (16 rows, one warp) and 7.9 by this one (16 rows,
    /// four warps: the fastest of the space); 96 heads of 128 36.7 → 18.2 µs and 12 of
    /// 512 41.1 → 33.6 µs (32 rows, eight warps: the fastest at both), causal or not.
    /// With more warps a block, one pass was as fast as two at 512 keys (33.6 against
    /// 33.8 µs), so the split takes one.
    fn rule_sharing_rows(
        limits: &TargetLimits,
        (heads, s, t, d): (i64, i64, i64, i64),
        f16: bool,
        mma: i64,
    ) -> Option<(AttnParams, String)> {
        if mma == 0 || limits.fragment_elements {
            return None;
        }
        let fit = |n: i64| (n.max(16) as u64).next_power_of_two() as i64;
        let mut candidates = Vec::new();
        for bq in [32, 16] {
            if bq > fit(s) {
                continue;
            }
            let found = [4, 2].into_iter().find_map(|cols| {
                [64, 32, 16].into_iter().find_map(|bkv| {
                    let mut p = AttnParams {
                        mma,
                        bq,
                        bkv,
                        warps: bq / mma * cols,
                        skip: !limits.uniform_barriers,
                        regs: false,
                        stages: 1,
                        two_pass: false,
                        shuffle: false,
                        shared_kv: false,
                    };
                    p.shuffle = p.threads_per_row() > 1 && p.shuffles_on(limits);
                    let ok = p.warp_grid().1 == cols
                        && p.check().is_ok()
                        && p.fits(limits, d, d, f16)
                        && bkv <= fit(t);
                    ok.then_some(p)
                })
            });
            candidates.extend(found);
        }
        let sms = limits.multiprocessors.max(1) as i64;
        let (p, blocks) = fill_the_gpu(&candidates, s, heads, sms)?;
        let why = format!(
            "rule: {} query rows a block for {heads} heads of {s} × {t} ({blocks} blocks over {sms} multiprocessors), {} warps sharing each {mma} rows, {} keys a step{}",
            p.bq,
            p.warp_grid().1,
            p.bkv,
            if p.shuffle {
                ", row statistics by subgroup shuffles"
            } else {
                ""
            }
        );
        Some((p, why))
    }
}

/// The first of `candidates` (largest query tile first) whose grid gives every one of
/// `sms` multiprocessors a block at `heads` heads of `s` rows, else the last (the most
/// blocks), with its block count.
fn fill_the_gpu(
    candidates: &[AttnParams],
    s: i64,
    heads: i64,
    sms: i64,
) -> Option<(AttnParams, i64)> {
    let blocks = |p: &AttnParams| ceil_div(s, p.bq) * heads;
    let p = candidates
        .iter()
        .find(|p| blocks(p) >= sms)
        .or(candidates.last())
        .copied()?;
    Some((p, blocks(&p)))
}
