//! Aligned copies of the fp32 product's operands (`al`,
//! `weft_ops::templates::matmul::align`): right at odd sizes in the interpreter (which
//! also reports races and out-of-bounds accesses) for every tile of the space, in bounds
//! by the prover, two or three kernels as the shape needs; no rule takes them; `al` = 0
//! never copies, and copies of a split product are refused.

mod common;

use proptest::prelude::*;
use weft_codegen_common::TargetLimits;
use weft_ir::bounds::prove_all;
use weft_ops::check::Checker;
use weft_ops::templates::{Config, matmul, split_k};
use weft_ops::{Shape, Workload};

fn workload(text: &str) -> Workload {
    Workload::new("matmul", &Shape::parse("matmul", text).unwrap()).unwrap()
}

/// `config` with `al` set.
fn with_al(config: &Config, al: i64) -> Config {
    let mut c = config.clone();
    c.0.retain(|(n, _)| n != "al");
    c.0.push(("al".to_string(), al));
    c
}

/// The unsplit configs of the CUDA and NVIDIA-Vulkan spaces.
fn unsplit() -> Vec<Config> {
    let mut all = matmul::op_space(&TargetLimits::cuda());
    all.extend(matmul::op_space(&common::nvidia_vulkan_limits()));
    all.retain(|c| split_k::parts(c).is_ok_and(|(_, sk)| sk == 1));
    all
}

/// Runs `config` on `w` in the interpreter with `kernels` kernels expected: right and
/// proven in bounds, or why not.
fn check(w: &Workload, config: &Config, kernels: usize, seed: u64) -> Result<(), String> {
    let what = format!("{config} at {}", w.shape);
    let lowered = w
        .lower_with("template", Some(config))
        .map_err(|e| format!("{what}: {e}"))?;
    if lowered.kernels.len() != kernels {
        return Err(format!(
            "{what}: {} kernel(s), want {kernels}",
            lowered.kernels.len()
        ));
    }
    for r in prove_all(&lowered) {
        if !r.is_proven() {
            return Err(format!("{what}: {r}"));
        }
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

    /// Any tile over the copies: A copied where k is unaligned, B where k or n is; no
    /// copy where both are aligned.
    #[test]
    fn products_over_aligned_copies_are_right_at_odd_sizes(
        ci in any::<prop::sample::Index>(),
        m in 1i64..140,
        n in 1i64..140,
        k in 1i64..200,
        seed in 0u64..1000,
    ) {
        let all = unsplit();
        let config = with_al(&all[ci.index(all.len())], 1);
        let kernels = 1 + usize::from(k % 4 != 0) + usize::from(k % 4 != 0 || n % 4 != 0);
        let w = workload(&format!("m={m},n={n},k={k}"));
        check(&w, &config, kernels, seed).map_err(TestCaseError::fail)?;
    }
}

/// `al` = 0 keeps one kernel at any size; `al` over a split product is a named error; a
/// bad value is named.
#[test]
fn al_zero_never_copies_and_a_split_is_refused() {
    let seed = matmul::default_config(&TargetLimits::cuda());
    let w = workload("m=37,n=45,k=29");
    check(&w, &with_al(&seed, 0), 1, 1).unwrap();
    let split = split_k::split(with_al(&seed, 1), 2);
    let err = w.lower_with("template", Some(&split)).unwrap_err();
    assert!(err.to_string().contains("unsplit"), "{err}");
    let err = w
        .lower_with("template", Some(&with_al(&seed, 2)))
        .unwrap_err();
    assert!(err.to_string().contains("`al` = 2"), "{err}");
}

/// No rule copies (they did not pay where they were predicted to: `align`'s docs); the
/// copies asked for at 2039³ compile with NVRTC (or are skipped with the reason printed
/// where it is absent).
#[test]
fn copies_are_asked_for_never_ruled() {
    let limits = TargetLimits::cuda();
    let rule = matmul::SPEC.rule.unwrap();
    let shape = Shape::parse("matmul", "m=2039,n=2039,k=2039").unwrap();
    let (config, why) = rule(&limits, &shape);
    assert!(!why.contains("aligned buffers"), "{why}");
    let w = Workload::new("matmul", &shape).unwrap();
    assert_eq!(
        w.lower_with("template", Some(&config))
            .unwrap()
            .kernels
            .len(),
        1
    );
    let lowered = w
        .lower_with("template", Some(&with_al(&config, 1)))
        .unwrap();
    assert_eq!(lowered.kernels.len(), 3);
    let source = weft_codegen_cuda::emit_lowered(&lowered, &Default::default()).unwrap();
    if let Err(e) = weft_codegen_cuda::nvrtc::check_arch(&source.source, "sm_90") {
        panic!("{e}");
    }
}
