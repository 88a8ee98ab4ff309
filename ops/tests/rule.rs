//! The stated rule (`weft_kernels::rule`) as the ops' templates use it with no
//! tuning record: for every op with a rule, at its small and benchmark shapes and at
//! shapes no tile fits (ViT/BERT's long-K product among them), on every target's limits,
//! the config it picks is a point of the template's space that builds, and it says why.
//! That the space's configs compute the right thing is `tests/tests/templates.rs`' job.

mod common;

use common::rule_tiles;
use weft_codegen_common::TargetLimits;
use weft_kernels::{Config, matmul, rule, split_k};
use weft_ops::check::Checker;
use weft_ops::{OPS, Shape, Workload};

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
                    space.contains(&tile) && (1..=rule::MAX_SPLITS).contains(&sk),
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
    let op = weft_ops::find("matmul").unwrap();
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

/// Past 2048³ the 128×128 tiles overflow the one round of two a multiprocessor an H100
/// holds (17² = 289 over 264 places): the rule takes the 96-row tile of three a
/// multiprocessor, unsplit, which ran 2049³–2176³ at cuBLAS's speed where the 128×128
/// tile ran 1.3–1.7× slower (`measurements/h100-2026-11-27i`). Where the 128×128
/// tiles fit one round, and over short reductions, it keeps the tiles of before.
#[test]
fn a_tile_of_96_rows_fills_the_last_round() {
    let h100 = rule_tiles::h100();
    let spec = weft_ops::find("matmul").unwrap().template.unwrap();
    let rows = |m: i64, n: i64, k: i64| {
        let shape = Shape::parse("matmul", &format!("m={m},n={n},k={k}")).unwrap();
        let (config, why) = spec.untuned(&h100, &shape);
        (config.get("rm"), config.get("sk"), why)
    };
    for s in [2049, 2052, 2080, 2112, 2176, 3001] {
        let (rm, sk, why) = rows(s, s, s);
        assert_eq!((rm, sk), (Some(3), None), "{s}³: {why}");
    }
    for (m, n, k) in [
        (2048, 2048, 2048),
        (2000, 2000, 2000),
        (1024, 1024, 1024),
        (4095, 4097, 63),
        (1531, 769, 383),
        (1024, 768, 3072),
    ] {
        let (rm, _, why) = rows(m, n, k);
        assert_ne!(rm, Some(3), "{m}x{n}x{k}: {why}");
    }
}

/// Over rows that are not 16-byte aligned (k and n not multiples of 4) the four-warp
/// 128×128 tile with steps of 8 becomes the same tile over eight warps, registers capped
/// for two blocks (the fixed default), which ran 2.5–3.0% faster at every such cube
/// below 2048 on an H100; aligned products keep the four warps.
#[test]
fn unaligned_rows_take_the_eight_warp_tile() {
    let h100 = rule_tiles::h100();
    let spec = weft_ops::find("matmul").unwrap().template.unwrap();
    let pick = |s: i64| {
        let shape = Shape::parse("matmul", &format!("m={s},n={s},k={s}")).unwrap();
        spec.untuned(&h100, &shape)
    };
    let eight = matmul::default_config(&h100);
    assert_eq!(eight.get("mb"), Some(2));
    for s in [1985, 2001, 2039, 2047] {
        let (config, why) = pick(s);
        assert_eq!(config, eight, "{s}³: {why}");
        assert!(why.contains("not 16-byte aligned"), "{why}");
    }
    for s in [2000, 2044, 2048] {
        let (config, why) = pick(s);
        assert_eq!(
            config.get("wm").zip(config.get("wn")),
            Some((2, 2)),
            "{s}³: {why}"
        );
    }
    // Not where the compiler takes no register cap (WGSL).
    let (config, _) = spec.untuned(
        &TargetLimits::webgpu_default(),
        &Shape::parse("matmul", "m=2039,n=2039,k=2039").unwrap(),
    );
    assert_ne!(config.get("mb"), Some(2));
}

/// The fp32 matmul's rule, given the H100's 132 multiprocessors, against every tile it
/// chooses among timed at the 60 `mixed` shapes on that H100 (issue 26's target: the
/// config with no record within 0.8x of the tuned best's speed at every shape). Its cost
/// model's constants were fitted on this data (`fit_fp32_rule.rs`; refitted 2026-11-27e
/// after 20 of the shapes were re-measured on the kernels with untested loads, and again
/// with a shared-memory term on 2026-11-27g after 29 more were re-measured with
/// programmatic dependent launch): the model reaches 0.8x at all 60, at worst 0.81x
/// (128×768×768), where the constants of 27e reached 58 on the same data, at worst 0.77x
/// (196×1024×256 and 3136×64×256). The test pins the fit, and fails if a change to the
/// model or the space moves a pick to a slow tile.
#[test]
fn the_fp32_rule_is_near_the_fastest_tile_measured_on_an_h100() {
    let h100 = rule_tiles::h100();
    let times = rule_tiles::h100_times();
    assert_eq!(times.len(), 60);
    let spec = weft_ops::find("matmul").unwrap().template.unwrap();
    let picks = rule_tiles::picks(&times, |shape| spec.untuned(&h100, shape));
    let (near, _, worst) = rule_tiles::figure(&picks);
    let report: Vec<String> = picks
        .iter()
        .filter(|p| p.ratio < 0.8)
        .map(|p| format!("{:.2} {:?}: {}", p.ratio, p.shape, p.text))
        .collect();
    assert!(
        near >= 60 && worst >= 0.8,
        "{near} of 60 within 0.8x, worst {worst:.2}: {report:#?}"
    );
}

/// Products too small to fill the GPU (the cost model's pick launching fewer blocks than
/// a quarter of the multiprocessors) take the row tile unsplit, right at odd sizes;
/// products that fill it keep the model's tile.
#[test]
fn small_products_take_an_unsplit_row_tile() {
    let spec = weft_ops::find("matmul").unwrap().template.unwrap();
    let limits = TargetLimits {
        multiprocessors: 132,
        ..TargetLimits::cuda()
    };
    let rows_and_parts = |c: &Config| {
        let (tile, sk) = split_k::parts(c).unwrap();
        (
            matmul::MatmulParams::from_config(&tile).unwrap().block_m(),
            sk,
        )
    };
    for text in [
        "m=17,n=33,k=65",
        "m=64,n=64,k=64",
        "m=127,n=127,k=127",
        "m=5,n=200,k=9",
    ] {
        let shape = Shape::parse("matmul", text).unwrap();
        let (config, why) = spec.untuned(&limits, &shape);
        assert_eq!(rows_and_parts(&config), (1, 1), "{text}: {config} ({why})");
        assert!(why.contains("a quarter of 132"), "{why}");
        // Right at these odd sizes (the interpreter, against float64).
        let w = Workload::new("matmul", &shape).unwrap();
        let lowered = w.lower_with("template", Some(&config)).unwrap();
        let inputs = w.random_inputs(11);
        let out = w.run_interp(&lowered, &inputs).unwrap();
        let e = Checker::new(&w, &inputs).check(&out);
        assert!(e.is_right(), "{text}: {e}");
    }
    for text in [
        "m=256,n=256,k=256",
        "m=128,n=768,k=768",
        "m=64,n=64,k=32768",
    ] {
        let shape = Shape::parse("matmul", text).unwrap();
        let (config, why) = spec.untuned(&limits, &shape);
        assert!(rows_and_parts(&config).0 > 1, "{text}: {config} ({why})");
    }
}
