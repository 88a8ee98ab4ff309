//! Split-K as a parameter of the matmul templates' spaces (`sk`,
//! `weft_kernels::split_k`): every split config is right at odd sizes in the
//! interpreter (which also reports races and out-of-bounds accesses) for fp32 and fp16
//! matmul and the implicit-GEMM convolutions, a split is two kernels whose second
//! applies the epilogue once, the tuner is offered splits only where they can pay, and
//! a bad `sk` is a named error.

mod common;

use proptest::prelude::*;
use weft_codegen_common::{MatrixUnit, TargetLimits};
use weft_ir::dtype::DType;
use weft_ir::kernel::KernelParam;
use weft_kernels::{Config, matmul, matmul_f16, rule, split_k};
use weft_ops::check::Checker;
use weft_ops::{Shape, Workload};

fn workload(op: &str, text: &str) -> Workload {
    Workload::new(op, &Shape::parse(op, text).unwrap()).unwrap()
}

/// CUDA's limits with matrix units of the square sizes `mma` (f16 in, f32 out).
fn resources(mma: &[i64]) -> TargetLimits {
    TargetLimits {
        matrix_units: mma
            .iter()
            .map(|&s| MatrixUnit::new(s as u32, s as u32, s as u32, DType::F16, DType::F32))
            .collect(),
        ..TargetLimits::cuda()
    }
}

/// The split configs of `space`.
fn splits(space: Vec<Config>) -> Vec<Config> {
    space
        .into_iter()
        .filter(|c| c.get("sk").is_some())
        .collect()
}

/// `config` with its split set to `sk` (a count the spaces do not list: the rule picks
/// any from 2 to 16).
fn resplit(config: &Config, sk: i64) -> Config {
    let (tile, _) = split_k::parts(config).unwrap();
    split_k::split(tile, sk)
}

/// Runs `config` of `schedule` on `w` in the interpreter: right, or why not.
fn check(w: &Workload, schedule: &str, config: &Config, seed: u64) -> Result<(), String> {
    let what = format!("{} {config} at {}", w.op.name, w.shape);
    let lowered = w
        .lower_with(schedule, Some(config))
        .map_err(|e| format!("{what}: {e}"))?;
    if lowered.kernels.len() < 2 {
        return Err(format!(
            "{what}: {} kernel(s), not split",
            lowered.kernels.len()
        ));
    }
    let inputs = w.random_inputs(seed);
    let out = w
        .run_interp(&lowered, &inputs)
        .map_err(|e| format!("{what}: {e}"))?;
    let e = Checker::new(w, &inputs).check(&out);
    if e.is_right() {
        Ok(())
    } else {
        Err(format!("{what}: error {e}"))
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    /// fp32 matmul: split configs of the CUDA and WebGPU-on-Vulkan spaces, in the
    /// space's parts or any other count, at odd sizes whose reduction the parts divide
    /// unevenly (some parts wholly past the end of a short one).
    #[test]
    fn split_fp32_matmuls_are_right_at_odd_sizes(
        ci in any::<prop::sample::Index>(),
        odd in prop::sample::select(vec![0i64, 3, 5, 11, 16]),
        m in 1i64..140,
        n in 1i64..140,
        k in 1i64..400,
        seed in 0u64..1000,
    ) {
        let mut all = splits(matmul::op_space(&TargetLimits::cuda()));
        all.extend(splits(matmul::op_space(&common::nvidia_vulkan_limits())));
        let mut config = all[ci.index(all.len())].clone();
        if odd > 0 {
            config = resplit(&config, odd);
        }
        let w = workload("matmul", &format!("m={m},n={n},k={k}"));
        check(&w, "template", &config, seed).map_err(TestCaseError::fail)?;
    }

    /// fp16 matmul (f32 partials, rounded to fp16 once): split configs of the spaces for
    /// 16, 8 and no matrix units.
    #[test]
    fn split_fp16_matmuls_are_right_at_odd_sizes(
        unit in 0usize..3,
        ci in any::<prop::sample::Index>(),
        odd in prop::sample::select(vec![0i64, 3, 7]),
        m in 1i64..100,
        n in 1i64..100,
        k in 1i64..300,
        seed in 0u64..1000,
    ) {
        let all = splits(matmul_f16::op_space(&resources([&[16][..], &[8], &[]][unit])));
        let mut config = all[ci.index(all.len())].clone();
        if odd > 0 {
            config = resplit(&config, odd);
        }
        let w = workload("matmul-f16", &format!("m={m},n={n},k={k}"));
        check(&w, "template", &config, seed).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    /// The implicit-GEMM convolutions split: fp32 with and without bias-ReLU (fused into
    /// the summing kernel, or a third kernel with `fuse` = 0), and the fp16 ones (NHWC
    /// with and without bias, NCHW).
    #[test]
    fn split_convolutions_are_right(
        op in 0usize..6,
        ci in any::<prop::sample::Index>(),
        sk in 2i64..7,
        n in 1i64..3,
        c in prop::sample::select(vec![1i64, 3, 8, 13, 24]),
        hw in (1i64..8, 1i64..8),
        k in 1i64..24,
        rs in (1i64..4, 1i64..4),
        stride in 1i64..3,
        pad in 0i64..2,
        unfused in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let ops = [
            "conv2d",
            "conv2d-bias-relu",
            "conv2d-f16",
            "conv2d-f16-bias-relu",
            "conv2d-f16-nchw",
            "conv2d-f16",
        ];
        let name = ops[op];
        let space = if name.contains("f16") {
            matmul_f16::op_space_over_views(&resources(if op == 5 { &[] } else { &[16] }))
        } else {
            matmul::op_space(&TargetLimits::cuda())
        };
        let all = splits(space);
        let mut config = resplit(&all[ci.index(all.len())], sk);
        if name == "conv2d-bias-relu" && unfused {
            config.0.push(("fuse".into(), 0));
        }
        let (h, w) = (hw.0 + rs.0, hw.1 + rs.1);
        let text = format!(
            "n={n},c={c},h={h},w={w},k={k},r={},s={},stride={stride},pad={pad}",
            rs.0, rs.1
        );
        check(&workload(name, &text), "implicit-gemm", &config, seed)
            .map_err(TestCaseError::fail)?;
    }
}

/// A split convolution with bias and ReLU: the first kernel computes the partials and
/// reads no bias; the second sums them and applies bias and ReLU once, and is the only
/// one that writes the output.
#[test]
fn the_epilogue_runs_once_after_the_sum() {
    let w = workload(
        "conv2d-bias-relu",
        "n=1,c=64,h=9,w=9,k=40,r=3,s=3,stride=1,pad=1",
    );
    let config = split_k::split(matmul::default_config(&TargetLimits::cuda()), 4);
    let lowered = w.lower_with("implicit-gemm", Some(&config)).unwrap();
    assert_eq!(lowered.kernels.len(), 2);
    let names = |i: usize| -> Vec<String> {
        lowered.kernels[i]
            .params
            .iter()
            .filter(|p| matches!(p, KernelParam::Buffer { .. }))
            .map(|p| p.name().to_string())
            .collect()
    };
    let (parts, sum) = (names(0), names(1));
    assert!(!parts.iter().any(|n| n == "bias"), "{parts:?}");
    assert!(sum.iter().any(|n| n == "bias"), "{sum:?}");
    // The grid of the parts has one layer per part.
    assert_eq!(lowered.kernels[0].grid.iter().product::<u32>() % 4, 0);
    let inputs = w.random_inputs(5);
    let out = w.run_interp(&lowered, &inputs).unwrap();
    let e = Checker::new(&w, &inputs).check(&out);
    assert!(e.is_right(), "error {e}");
}

/// The tuner times splits only where the output tiles are few and the reduction long:
/// a ViT/BERT projection keeps some, a large square and a short reduction none.
#[test]
fn splits_are_tuned_only_where_they_can_pay() {
    let spec = weft_ops::find("matmul").unwrap().template.unwrap();
    let space = (spec.space)(&TargetLimits::cuda());
    let kept = |text: &str| {
        let shape = Shape::parse("matmul", text).unwrap();
        space
            .iter()
            .filter(|c| c.get("sk").is_some() && (spec.pays)(&TargetLimits::cuda(), &shape, c))
            .count()
    };
    assert!(
        kept("m=197,n=768,k=3072") > 20,
        "{}",
        kept("m=197,n=768,k=3072")
    );
    assert_eq!(kept("m=4096,n=4096,k=4096"), 0);
    assert_eq!(kept("m=197,n=768,k=200"), 0);
    // Every unsplit config may always be timed.
    let shape = Shape::parse("matmul", "m=4096,n=4096,k=4096").unwrap();
    assert!(
        space
            .iter()
            .filter(|c| c.get("sk").is_none())
            .all(|c| (spec.pays)(&TargetLimits::cuda(), &shape, c))
    );
}

#[test]
fn a_bad_split_is_a_named_error() {
    let w = workload("matmul", "m=8,n=8,k=8");
    for sk in [0, rule::MAX_SPLITS + 1, -2] {
        let config = split_k::split(matmul::default_config(&TargetLimits::cuda()), 1);
        let mut config = config;
        config.0.push(("sk".into(), sk));
        let e = w.lower_with("template", Some(&config)).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("`sk` = {sk} must be in 1..={}", rule::MAX_SPLITS)),
            "{e}"
        );
    }
    // `sk=1` is the unsplit product: one kernel, the same as without it.
    let plain = matmul::default_config(&TargetLimits::cuda());
    let mut one = plain.clone();
    one.0.push(("sk".into(), 1));
    let a = w.lower_with("template", Some(&one)).unwrap();
    let b = w.lower_with("template", Some(&plain)).unwrap();
    assert_eq!(a.kernels.len(), 1);
    assert_eq!(format!("{:?}", a.kernels), format!("{:?}", b.kernels));
}

/// A product of one row takes a row tile (one row of C a block) split in the most parts
/// that can pay, right in the interpreter at odd sizes; the tuner is offered the row
/// tiles' splits there, and the rule never takes a row tile for more rows.
#[test]
fn one_row_products_take_a_split_row_tile() {
    let spec = weft_ops::find("matmul").unwrap().template.unwrap();
    let limits = TargetLimits::cuda();
    // A config's block rows and parts.
    let rows_and_parts = |c: &Config| {
        let (tile, sk) = split_k::parts(c).unwrap();
        (
            matmul::MatmulParams::from_config(&tile).unwrap().block_m(),
            sk,
        )
    };
    for (text, parts) in [
        ("m=1,n=1000,k=2048", 64),
        ("m=1,n=77,k=333", 8),
        ("m=1,n=4096,k=4096", 16),
    ] {
        let shape = Shape::parse("matmul", text).unwrap();
        let (config, why) = spec.untuned(&limits, &shape);
        assert_eq!(
            rows_and_parts(&config),
            (1, parts),
            "{text}: {config} ({why})"
        );
        check(&workload("matmul", text), "template", &config, 7).unwrap();
        let row_splits = (spec.space)(&limits)
            .into_iter()
            .filter(|c| {
                let (rows, sk) = rows_and_parts(c);
                rows == 1 && sk > 1 && (spec.pays)(&limits, &shape, c)
            })
            .count();
        assert!(row_splits > 0, "{text}: no split row tile offered");
    }
    for text in ["m=2,n=1000,k=2048", "m=197,n=768,k=3072"] {
        let shape = Shape::parse("matmul", text).unwrap();
        let (config, why) = spec.untuned(&limits, &shape);
        assert!(rows_and_parts(&config).0 > 1, "{text}: {config} ({why})");
    }
}

/// The summing kernel of a split whose outputs 256 does not divide tests each thread's
/// bound once, outside its loop over the parts: with the test inside, NVCC branched
/// around every load and issued them one at a time (`ir/src/lower/unswitch.rs`).
#[test]
fn the_summing_kernel_tests_its_bound_outside_the_loop_over_the_parts() {
    use weft_ir::kernel::KStmt;
    let w = workload("matmul", "m=1,n=1000,k=2048");
    let config = split_k::split(
        Config::parse("wm=1,wn=4,rm=1,rn=1,lm=1,ln=32,tm=1,tn=1,bk=32,g=8,mb=0").unwrap(),
        64,
    );
    let lowered = w.lower_with("template", Some(&config)).unwrap();
    let sum = &lowered.kernels[1];
    let (mut loops, mut guarded_loops) = (0, 0);
    sum.body.visit(&mut |s| {
        if let KStmt::For { body, .. } = s {
            loops += 1;
            let mut guard = false;
            body.visit(&mut |s| guard |= matches!(s, KStmt::If { .. }));
            guarded_loops += usize::from(guard);
        }
    });
    assert!(loops > 0, "{}: no loop over the parts", sum.name);
    assert_eq!(
        guarded_loops, 0,
        "{}: a bound tested inside the loop",
        sum.name
    );
}
