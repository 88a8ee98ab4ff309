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
use weft_ops::templates::Config;

pub use crate::anchor::{AnchorChoice, AnchorKey, AnchorTemplate, Choices};
use weft_ops::templates::matmul::{self, MatmulParams};
use weft_ops::templates::matmul_f16::{self, F16Params};

use crate::anchor::MAX_SPLITS;
use crate::lower::choose::{ENOUGH_TILES, split_k};

pub use search::{AnchorResult, TuneOptions, Tuned, tune};

/// The candidates a tuning run measures for `key` on `limits`, at most `limit`: every
/// tile of the template's space with no split, with the stated rule's split for it and
/// with twice that; ordered by how close each comes to one wave of [`ENOUGH_TILES`]
/// blocks, then by the tile's useful area. The rule's own choice is first.
pub fn candidates(limits: &TargetLimits, key: &AnchorKey, limit: usize) -> Vec<AnchorChoice> {
    let (m, n, k) = (key.m, key.n, key.k);
    // (config, block_m, block_n).
    let tiles: Vec<(Config, i64, i64)> = match key.template {
        AnchorTemplate::Matmul => matmul::space(limits)
            .iter()
            .filter_map(|c| MatmulParams::from_config(c).ok())
            .filter(|p| p.min_blocks == 0)
            .map(|p| (p.config(), p.block_m(), p.block_n()))
            .collect(),
        AnchorTemplate::MatmulF16 => matmul_f16::space_over_views(limits)
            .iter()
            .filter_map(|c| F16Params::from_config(c).ok())
            .map(|p| (p.config(), p.block_m(), p.block_n()))
            .collect(),
    };
    let mut all: Vec<(f64, i64, AnchorChoice)> = Vec::new();
    for (config, bm, bn) in tiles {
        let tiles = ceil_div(m, bm) * ceil_div(n, bn);
        let rule = split_k(m, n, k, bm, bn);
        let mut splits = vec![1, rule];
        if rule > 1 && rule * 2 <= MAX_SPLITS && k / (rule * 2) >= 128 {
            splits.push(rule * 2);
        }
        splits.dedup();
        for s in splits {
            let blocks = (tiles * s) as f64;
            let distance = (blocks / ENOUGH_TILES as f64).ln().abs();
            let useful = bm.min(m) * bn.min(n);
            all.push((
                distance,
                -useful,
                AnchorChoice {
                    config: config.clone(),
                    splits: s,
                },
            ));
        }
    }
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let rule = rule_choice(limits, key);
    let mut out = vec![rule.clone()];
    out.extend(all.into_iter().map(|(_, _, c)| c).filter(|c| *c != rule));
    out.truncate(limit.max(1));
    out
}

/// The stated rule's choice for `key` (no record).
pub fn rule_choice(limits: &TargetLimits, key: &AnchorKey) -> AnchorChoice {
    let (config, splits, _) = crate::lower::choose::by_rule(limits, key);
    AnchorChoice { config, splits }
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
            views: "test".into(),
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
}
