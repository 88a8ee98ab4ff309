//! Whole-model tuning (`weft model tune`): the anchors a compiled model holds, the
//! choices a tuning run makes for them, and the search ([`search::tune`]) that measures
//! candidates on a device.
//!
//! An anchor is identified by everything that shapes its kernel: the template, the
//! product's `m × n × k`, and the views its operands are read through (a convolution's
//! geometry and layout, a Gemm's transposes) — so that two layers of one shape share a
//! tuning, and a record made for one model serves any other with the same layer.

pub mod search;

use std::collections::HashMap;
use std::fmt;

use weft_codegen_common::TargetLimits;
use weft_ops::templates::Config;
use weft_ops::templates::matmul::{self, MatmulParams};
use weft_ops::templates::matmul_f16::{self, F16Params};

use crate::lower::choose::{ENOUGH_TILES, MAX_SPLITS, split_k};

pub use search::{AnchorResult, TuneOptions, Tuned, tune};

/// The template an anchor runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnchorTemplate {
    /// The fp32 matmul template (CUDA cores; no TF32).
    Matmul,
    /// The fp16 matmul template (matrix units where the target has them, f32 sums).
    MatmulF16,
}

impl AnchorTemplate {
    /// The template's name, as tuning records name the schedule.
    pub fn name(self) -> &'static str {
        match self {
            AnchorTemplate::Matmul => "matmul",
            AnchorTemplate::MatmulF16 => "matmul_f16",
        }
    }
}

/// What an anchor's kernel depends on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AnchorKey {
    pub template: AnchorTemplate,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    /// The operands' views: `conv x=1x64x56x56 w=64x64x3x3 stride=1,1 pad=1,1,1,1
    /// dilation=1,1 NHWC`, `gemm transB`.
    pub views: String,
}

impl fmt::Display for AnchorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "m={},n={},k={} {}", self.m, self.n, self.k, self.views)
    }
}

/// A config of the anchor's template and how many parts its reduction is split into.
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorChoice {
    pub config: Config,
    pub splits: i64,
}

impl AnchorChoice {
    /// `name=value,...,splits=N`: the form tuning records store.
    pub fn to_record(&self) -> String {
        format!("{},splits={}", self.config, self.splits)
    }

    /// Reads [`AnchorChoice::to_record`]'s form back.
    pub fn from_record(text: &str) -> Result<AnchorChoice, String> {
        let mut config = Config::parse(text)?;
        let at = config
            .0
            .iter()
            .position(|(k, _)| k == "splits")
            .ok_or_else(|| format!("`{text}` names no `splits`"))?;
        let (_, splits) = config.0.remove(at);
        if !(1..=MAX_SPLITS).contains(&splits) {
            return Err(format!("splits={splits} is not in 1..={MAX_SPLITS}"));
        }
        Ok(AnchorChoice { config, splits })
    }
}

/// Choices made for anchors (by tuning), which lowering takes before its stated rule.
/// Keyed by the template's name and the key's text: the record's schedule and shape.
#[derive(Clone, Debug, Default)]
pub struct Choices {
    map: HashMap<(String, String), (AnchorChoice, String)>,
}

impl Choices {
    /// No choices: every anchor by the rule.
    pub fn none() -> Choices {
        Choices::default()
    }

    /// Uses `choice` for `key`; `why` is shown beside the schedule (`tuned: 12.1 µs`).
    pub fn insert(&mut self, key: &AnchorKey, choice: AnchorChoice, why: String) {
        self.insert_named(key.template.name(), &key.to_string(), choice, why);
    }

    /// Uses `choice` for the anchor on `template` (its name) whose key reads `key`: how
    /// a tuning record's schedule and shape name it.
    pub fn insert_named(&mut self, template: &str, key: &str, choice: AnchorChoice, why: String) {
        self.map
            .insert((template.to_string(), key.to_string()), (choice, why));
    }

    /// The choice for `key`, with why.
    pub fn get(&self, key: &AnchorKey) -> Option<&(AnchorChoice, String)> {
        self.map
            .get(&(key.template.name().to_string(), key.to_string()))
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

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
