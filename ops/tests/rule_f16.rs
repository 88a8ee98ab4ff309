//! The fp16 matmul's stated rule (the tensor-core cost model, `rule::tensor`) against the
//! kernel times an H100 measured at the 60 `mixed` shapes (`weft sweep --trials`,
//! 2026-11-25: 48 sampled configs of the whole space per shape, twice, and the rule of
//! the time; `docs/rule-f16.md`). An offline estimate: where the rule's pick was not
//! among the timed configs, only a GPU can say how it does.

mod common;

use common::sweeps::{figure, measured};
use weft_codegen_common::{TargetLimits, cuda_arch};
use weft_ops::Shape;

/// The sweeps: the first two with the rule the model replaces, the next two older (and a
/// different rule's picks) but the same kernels; the next two (2026-11-26d) time the
/// wgmma sub-space with its splits, and the model's own picks once it weighed them; the
/// last (2026-11-27) the whole space after the wgmma staging tile went over the stages
/// (more wgmma blocks a multiprocessor), with the rule's picks of then; and (2026-11-27b)
/// the long reductions over few tiles tuned whole again once splits went up to 64 parts.
const SWEEPS: [&str; 8] = [
    "h100-2026-11-25c/f16-1.json",
    "h100-2026-11-25e/f16-2.json",
    "h100-2026-11-25b/f16-1-2.json",
    "h100-2026-11-25b/f16-2-2.json",
    "h100-2026-11-26d/f16-wgmma-splits-1.json",
    "h100-2026-11-26d/f16-wgmma-splits-2.json",
    "h100-2026-11-27/f16-mixed.json",
    "h100-2026-11-27b/deep-f16.json",
];

/// The first config of the space, which a sampled tuning times first at every shape:
/// 2–3.5 µs faster than any other at the tiny shapes (64³: 2.5 µs, the same tile with a
/// k step of 64 6.1 µs, every other config 4.3 or more), more than its work explains.
/// The fit left it out; the figures are given with and without it.
const TIMED_FIRST: &str = "mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0";

/// An H100 as the sweeps saw it: sm_90 with wgmma (the sweeps timed wgmma configs), 132
/// multiprocessors, 227 KiB of shared memory a block.
fn h100() -> TargetLimits {
    TargetLimits {
        multiprocessors: 132,
        ..TargetLimits::cuda_arch(&cuda_arch("sm_90a").unwrap()).with_warpgroup_mma()
    }
}

#[test]
fn the_fp16_rule_is_near_the_fastest_config_measured_on_an_h100() {
    let limits = h100();
    let spec = weft_ops::find("matmul-f16").unwrap().template.unwrap();
    let data = measured(&SWEEPS);
    assert_eq!(data.len(), 60);
    let (mut new, mut new_rest, mut old, mut untimed) = (vec![], vec![], vec![], vec![]);
    let mut report = Vec::new();
    for (shape_text, m) in &data {
        let shape = Shape::parse("matmul-f16", shape_text).unwrap();
        let (config, why) = spec.untuned(&limits, &shape);
        let best = m.times.values().copied().fold(f64::INFINITY, f64::min);
        let best_rest = m
            .times
            .iter()
            .filter(|(c, _)| c.as_str() != TIMED_FIRST)
            .map(|(_, &us)| us)
            .fold(f64::INFINITY, f64::min);
        let Some(&us) = m.times.get(&config.to_string()) else {
            untimed.push(format!("{shape_text}: {config} ({why})"));
            continue;
        };
        new.push(best / us);
        new_rest.push(best_rest / us);
        old.push(best / m.old.1);
        report.push(format!(
            "{shape_text}: {:.2} (was {:.2}) {config} {us:.1} us, best {best:.1} us; {why}",
            best / us,
            best / m.old.1
        ));
    }
    let (near, geo, worst) = figure(&new);
    let (near_rest, geo_rest, worst_rest) = figure(&new_rest);
    let (near_old, geo_old, worst_old) = figure(&old);
    let summary = format!(
        "pick timed at {} of 60 shapes; there, of the best timed: ≥ 0.8x at {near}, \
         geometric mean {geo:.2}x, worst {worst:.2}x (without the config timed first: \
         {near_rest}, {geo_rest:.2}x, {worst_rest:.2}x); the old rule at the same shapes: \
         {near_old}, {geo_old:.2}x, {worst_old:.2}x\n{}\nnot timed:\n{}",
        new.len(),
        report.join("\n"),
        untimed.join("\n")
    );
    eprintln!("{summary}");
    // What the fit reached (docs/rule-f16.md); a change to the model, the constants or
    // the space that moves a pick to a slow config fails here.
    assert!(new.len() >= 25, "{summary}");
    assert!(near as f64 >= 0.75 * new.len() as f64, "{summary}");
    assert!(geo >= geo_old + 0.15 && worst >= 0.5, "{summary}");
}

/// The picks that matter most stay put: a 128×128 wgmma tile at 4096³, mma.sync tiles at
/// the tiny shapes (the TMA ring's fill costs more than it gains there), a split at a
/// long reduction over few tiles, and no wgmma where TMA cannot copy the rows.
#[test]
fn the_fp16_rule_takes_wgmma_where_it_pays_and_mma_sync_elsewhere() {
    let limits = h100();
    let rule = weft_ops::templates::MATMUL_F16.rule.unwrap();
    let at = |text: &str| rule(&limits, &Shape::parse("matmul-f16", text).unwrap()).0;
    let big = at("m=4096,n=4096,k=4096");
    let rows = big.get("wm").unwrap() * big.get("fm").unwrap() * 16;
    assert!(
        big.get("wg") > Some(0) && big.get("fn") == Some(8) && rows == 128,
        "{big}"
    );
    for tiny in ["m=64,n=64,k=64", "m=128,n=128,k=128", "m=17,n=33,k=65"] {
        assert_eq!(at(tiny).get("wg"), Some(0), "{tiny}: {}", at(tiny));
    }
    let long = at("m=64,n=64,k=32768");
    assert!(long.get("sk").is_some_and(|s| s >= 8), "{long}");
    assert_eq!(at("m=1021,n=1021,k=1021").get("wg"), Some(0));
}

/// At equal estimated cycles the rule takes the deeper ring: the same 64-row wgmma tile
/// in 4 stages where both depths fit as many blocks (GPT-2's 512-token products), and
/// still 3 where 3 stages fit more blocks a multiprocessor (its batch-8 ones).
#[test]
fn ties_go_to_the_deeper_ring_of_stages() {
    let limits = h100();
    let spec = weft_ops::find("matmul-f16").unwrap().template.unwrap();
    let pick = |text: &str| {
        spec.untuned(&limits, &Shape::parse("matmul-f16", text).unwrap())
            .0
    };
    for (shape, stages) in [
        ("m=512,n=3072,k=768", 4),
        ("m=512,n=768,k=3072", 4),
        ("m=1024,n=1024,k=1024", 4),
        ("m=4096,n=3072,k=768", 3),
        ("m=4096,n=4096,k=4096", 3),
    ] {
        let c = pick(shape);
        assert_eq!(c.get("wg"), Some(1), "{shape}: {c}");
        assert_eq!(c.get("st"), Some(stages), "{shape}: {c}");
    }
}
