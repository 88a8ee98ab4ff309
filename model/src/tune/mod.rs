//! Whole-model tuning (`weft model tune`): the anchors a compiled model holds, the
//! choices a tuning run makes for them, and the search ([`search::tune`]) that measures
//! candidates on a device.
//!
//! An anchor is identified by everything that shapes its kernel: the template, the
//! product's `m × n × k`, and the views its operands are read through (a convolution's
//! geometry and layout, a Gemm's transposes) — so that two layers of one shape share a
//! tuning, and a record made for one model serves any other with the same layer.

pub mod search;

use weft_codegen_common::TargetLimits;

pub use crate::anchor::{
    AnchorChoice, AnchorKey, AnchorTemplate, Choices, ConvInput, ConvViews, Views,
};
use weft_kernels::matmul;
use weft_kernels::matmul_f16;
use weft_kernels::matmul_f16::hopper;

use crate::anchor::MAX_SPLITS;
use crate::lower::choose::{ENOUGH_TILES, split_k};

pub use search::{AnchorResult, TuneOptions, Tuned, tune};

/// The candidates a tuning run measures for `key` on `limits`, at most `limit`: every
/// tile of the template's space with no split, with the stated rule's split for it and
/// with twice that. The rule's own choice is first; then, taking turns, the nearest not
/// yet taken to one, two and four waves of [`ENOUGH_TILES`] blocks (ties: the larger
/// useful area first), and where the anchor can run as Winograd F(2×2, 3×3), the
/// fp32 template's tiles over its 16 products nearest one and two waves. One wave suits a product the matrix units bound; an anchor whose
/// loads are gathers (a stem over an NCHW image, an im2col of few channels) wants more
/// warps to hide their latency, which only smaller tiles give.
/// The fp16 template's configs an anchor can take: the whole space where its operands
/// are stored tensors read as they are, else what reads through views.
fn f16_space(limits: &TargetLimits, key: &AnchorKey) -> Vec<weft_kernels::Config> {
    if key.stored_operands() {
        matmul_f16::space(limits)
    } else {
        matmul_f16::space_over_views(limits)
    }
}

pub fn candidates(limits: &TargetLimits, key: &AnchorKey, limit: usize) -> Vec<AnchorChoice> {
    let (m, n, k) = (key.m, key.n, key.k);
    let tiles = match key.template {
        AnchorTemplate::Matmul => matmul::tiles(limits),
        AnchorTemplate::MatmulF16 => matmul_f16::tiles(limits, &f16_space(limits, key), |t| {
            // Hopper's tiles where TMA can copy the operands, and never batched.
            t.warpgroups == 0 || (!key.batched() && hopper::unfit(n, k).is_none())
        }),
    };
    // (blocks, useful area, choice).
    let mut all: Vec<(f64, i64, AnchorChoice)> = Vec::new();
    for t in tiles {
        let (config, bm, bn) = (t.config, t.block_m, t.block_n);
        let tiles = ceil_div(m, bm) * ceil_div(n, bn) * key.batch;
        // A batched product is never split (its grid's third dimension is the batch).
        let rule = if key.batched() {
            1
        } else {
            split_k(m, n, k, bm, bn)
        };
        let mut splits = vec![1, rule];
        if rule > 1 && rule * 2 <= MAX_SPLITS && k / (rule * 2) >= 128 {
            splits.push(rule * 2);
        }
        splits.dedup();
        for s in splits {
            all.push((
                (tiles * s) as f64,
                bm.min(m) * bn.min(n),
                AnchorChoice::gemm(config.clone(), s),
            ));
        }
    }
    let gemm = all.len();
    // The Winograd variant where the anchor can take it: the fp32 template's tiles over
    // its 16 products (one grid layer each).
    if let Some([wm, wn, _]) = key.winograd {
        for t in matmul::tiles(limits) {
            let (bm, bn) = (t.block_m, t.block_n);
            all.push((
                (16 * ceil_div(wm, bm) * ceil_div(wn, bn)) as f64,
                bm.min(wm) * bn.min(wn),
                AnchorChoice {
                    config: t.config,
                    splits: 1,
                    winograd: true,
                },
            ));
        }
    }
    // One ordering per variant and target number of blocks, nearest first.
    let streams = [
        (0..gemm, 1.0),
        (gemm..all.len(), 1.0),
        (0..gemm, 2.0),
        (gemm..all.len(), 2.0),
        (0..gemm, 4.0),
    ];
    let orders: Vec<Vec<usize>> = streams
        .into_iter()
        .map(|(range, waves)| {
            let target = waves * ENOUGH_TILES as f64;
            let distance = |i: usize| (all[i].0 / target).ln().abs();
            let mut order: Vec<usize> = range.collect();
            order.sort_by(|&a, &b| {
                distance(a)
                    .total_cmp(&distance(b))
                    .then(all[b].1.cmp(&all[a].1))
            });
            order
        })
        .collect();
    let mut out = vec![rule_choice(limits, key)];
    let mut next = vec![0; orders.len()];
    let limit = limit.max(1).min(all.len() + 1);
    while out.len() < limit {
        let before = out.len();
        for (order, at) in orders.iter().zip(&mut next) {
            // The nearest to this target that is not taken yet.
            while *at < order.len() && out.contains(&all[order[*at]].2) {
                *at += 1;
            }
            if *at < order.len() && out.len() < limit {
                out.push(all[order[*at]].2.clone());
            }
        }
        if out.len() == before {
            break;
        }
    }
    out
}

/// The stated rule's choice for `key` (no record).
pub fn rule_choice(limits: &TargetLimits, key: &AnchorKey) -> AnchorChoice {
    crate::lower::choose::by_rule(limits, key, false, Default::default()).0
}

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(template: AnchorTemplate, m: i64, n: i64, k: i64) -> AnchorKey {
        AnchorKey {
            template,
            m,
            n,
            k,
            batch: 1,
            views: crate::anchor::Views::GEMM,
            winograd: None,
        }
    }

    #[test]
    fn candidates_start_with_the_rule_and_stay_in_the_space() {
        for limits in [TargetLimits::cuda(), TargetLimits::webgpu_default()] {
            for t in [AnchorTemplate::Matmul, AnchorTemplate::MatmulF16] {
                let key = key(t, 49, 512, 4608);
                let c = candidates(&limits, &key, 20);
                // At most the limit; more than the rule's own choice.
                assert!(c.len() <= 20 && c.len() >= 2, "{}", c.len());
                assert_eq!(c[0], rule_choice(&limits, &key));
                for choice in &c {
                    let in_space = match t {
                        AnchorTemplate::Matmul => matmul::space(&limits).contains(&choice.config),
                        AnchorTemplate::MatmulF16 => {
                            matmul_f16::space_over_views(&limits).contains(&choice.config)
                        }
                    };
                    assert!(in_space, "{}", choice.to_record());
                    assert!((1..=MAX_SPLITS).contains(&choice.splits));
                }
                // No candidate twice.
                for (i, a) in c.iter().enumerate() {
                    assert!(!c[i + 1..].contains(a), "{}", a.to_record());
                }
            }
        }
    }

    #[test]
    fn choices_read_back_from_records() {
        let limits = TargetLimits::cuda();
        let choice = rule_choice(&limits, &key(AnchorTemplate::MatmulF16, 49, 512, 4608));
        let text = choice.to_record();
        assert_eq!(AnchorChoice::from_record(&text).unwrap(), choice);
        assert!(AnchorChoice::from_record("bm=64").is_err());
        assert!(AnchorChoice::from_record("bm=64,splits=99").is_err());
        assert!(AnchorChoice::from_record("garbage").is_err());
    }

    /// On sm_90a a product over stored operands also measures wgmma tiles (never where
    /// TMA cannot copy); one over views does not.
    #[test]
    fn stored_products_measure_wgmma_tiles_on_sm90a() {
        let limits = TargetLimits::cuda_arch(&weft_codegen_common::cuda_arch("sm_90a").unwrap())
            .with_warpgroup_mma();
        let wgmma = |c: &AnchorChoice| c.config.get("wg").unwrap_or(0) > 0;
        let mut stored = key(AnchorTemplate::MatmulF16, 128, 3072, 768);
        stored.views = crate::anchor::Views::Stored;
        let c = candidates(&limits, &stored, 40);
        assert!(c.iter().any(wgmma), "no wgmma tile among {}", c.len());
        let views = key(AnchorTemplate::MatmulF16, 128, 3072, 768);
        assert!(!candidates(&limits, &views, 40).iter().any(wgmma));
        // k = 100: TMA's rows are not a multiple of 16 bytes.
        stored.k = 100;
        assert!(!candidates(&limits, &stored, 40).iter().any(wgmma));
    }
}
