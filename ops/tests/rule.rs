//! The stated rule (`weft_ops::templates::rule`) as the ops' templates use it with no
//! tuning record: for every op with a rule, at its small and benchmark shapes and at
//! shapes no tile fits (ViT/BERT's long-K product among them), on every target's limits,
//! the config it picks is a point of the template's space that builds, and it says why.
//! That the space's configs compute the right thing is `tests/tests/templates.rs`' job.

use weft_codegen_common::TargetLimits;
use weft_ops::templates::split_k;
use weft_ops::{OPS, Shape};

#[test]
fn every_rule_picks_a_config_of_its_space_that_builds() {
    let targets = [
        TargetLimits::cuda(),
        TargetLimits::webgpu_default(),
        TargetLimits::rocm(),
        TargetLimits::metal(),
    ];
    let mut ruled = 0;
    for op in OPS {
        let Some(spec) = op.template else { continue };
        if spec.rule.is_none() {
            continue;
        }
        let mut shapes: Vec<Shape> = op
            .small
            .iter()
            .chain(op.bench)
            .map(|v| Shape::from_values(op, v).unwrap())
            .collect();
        if op.name.starts_with("matmul") {
            for text in [
                "m=197,n=768,k=3072",
                "m=1,n=1000,k=2048",
                "m=2039,n=2039,k=2039",
            ] {
                shapes.push(Shape::parse(op.name, text).unwrap());
            }
        }
        for limits in &targets {
            let space = (spec.space)(limits);
            for shape in &shapes {
                let (config, why) = spec.untuned(limits, shape);
                // A split may be in any number of parts; its tile is the space's.
                let (tile, sk) = split_k::parts(&config).unwrap();
                assert!(
                    space.contains(&tile) && (1..=16).contains(&sk),
                    "{} at {shape} on {}: {config} is not in the space",
                    op.name,
                    limits.name
                );
                assert_eq!(why.contains("split"), sk > 1, "{why}");
                assert!(why.starts_with("rule: "), "{why}");
                (spec.build)(shape, &config)
                    .unwrap_or_else(|e| panic!("{} at {shape} with {config}: {e}", op.name));
                ruled += 1;
            }
        }
    }
    // matmul, matmul-f16, the implicit-GEMM convolutions and Winograd.
    assert!(ruled > 50, "{ruled}");
}

#[test]
fn the_rule_follows_the_shape() {
    let cuda = TargetLimits::cuda();
    let op = OPS.iter().find(|o| o.name == "matmul").unwrap();
    let spec = op.template.unwrap();
    let at = |text: &str| {
        spec.untuned(&cuda, &Shape::parse("matmul", text).unwrap())
            .0
    };
    // A large square and a small-M, long-K product do not get the same tile: the fixed
    // default gave the latter 0.10x cuBLAS on an H100 (issue 26).
    assert_ne!(at("m=4096,n=4096,k=4096"), at("m=197,n=768,k=3072"));
    // The long reduction over few tiles is split; the large square is not.
    assert!(at("m=197,n=768,k=3072").get("sk").is_some_and(|s| s > 1));
    assert_eq!(at("m=4096,n=4096,k=4096").get("sk"), None);
    // A short reduction is not split however few its tiles.
    assert_eq!(at("m=64,n=64,k=200").get("sk"), None);
}
