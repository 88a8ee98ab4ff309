//! conv2d as a fused implicit GEMM: right at odd shapes for configs across the matmul
//! template's space (in the interpreter, which also checks races and bounds), one kernel
//! with its bias-ReLU epilogue, and named errors for shapes that make no convolution.

use proptest::prelude::*;
use weft_codegen_common::TargetLimits;
use weft_kernels::matmul;
use weft_ops::check::Checker;
use weft_ops::{Shape, Workload};

fn workload(op: &str, text: &str) -> Workload {
    Workload::new(op, &Shape::parse(op, text).unwrap()).unwrap()
}

/// Strided, padded, unpadded, 1×1 and non-square kernels, sizes that fit no tile.
const SHAPES: [&str; 5] = [
    "n=2,c=3,h=17,w=19,k=5,r=3,s=3,stride=2,pad=1",
    "n=1,c=5,h=9,w=7,k=3,r=3,s=2,stride=1,pad=0",
    "n=3,c=1,h=6,w=5,k=7,r=1,s=1,stride=1,pad=0",
    "n=1,c=4,h=11,w=13,k=9,r=5,s=3,stride=3,pad=2",
    "n=1,c=2,h=1,w=1,k=1,r=3,s=3,stride=1,pad=1",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn implicit_gemm_is_right_for_configs_across_the_space(
        ci in any::<prop::sample::Index>(),
        si in any::<prop::sample::Index>(),
        bias in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let configs = matmul::space(&TargetLimits::cuda());
        let config = &configs[ci.index(configs.len())];
        let op = if bias { "conv2d-bias-relu" } else { "conv2d" };
        let w = workload(op, SHAPES[si.index(SHAPES.len())]);
        let lowered = w.lower_with("implicit-gemm", Some(config)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(lowered.kernels.len(), 1);
        let inputs = w.random_inputs(seed);
        let out = w.run_interp(&lowered, &inputs).map_err(|e| TestCaseError::fail(format!("{config}: {e}")))?;
        let e = Checker::new(&w, &inputs).check(&out);
        prop_assert!(e.is_right(), "{} {} at {}: error {}", op, config, w.shape, e);
    }
}

/// Conv-BN-ReLU: the implicit GEMM fuses bias and ReLU into its one kernel; the direct
/// schedule runs them as a second kernel.
#[test]
fn bias_relu_is_fused_into_the_implicit_gemm() {
    let w = workload("conv2d-bias-relu", SHAPES[0]);
    assert_eq!(w.lower("implicit-gemm").unwrap().kernels.len(), 1);
    assert_eq!(w.lower("direct").unwrap().kernels.len(), 2);
    let func = w.scheduled("implicit-gemm", None).unwrap();
    let names: Vec<&str> = func.params.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["x", "w", "bias", "z"]);
    // Neither the im2col view nor the GEMM result is stored anywhere.
    assert!(
        func.allocs
            .iter()
            .all(|b| b.scope() != weft_ir::expr::Scope::Global)
    );
}

/// `fuse=0`: the same implicit GEMM storing the convolution, then bias and ReLU as a
/// second kernel — right, and the baseline the fused figure is measured against.
#[test]
fn bias_relu_unfused_is_two_kernels_and_right() {
    let w = workload("conv2d-bias-relu", SHAPES[0]);
    let mut config = matmul::default_config(&TargetLimits::cuda());
    config.0.push(("fuse".into(), 0));
    let lowered = w.lower_with("implicit-gemm", Some(&config)).unwrap();
    assert_eq!(lowered.kernels.len(), 2);
    let inputs = w.random_inputs(3);
    let out = w.run_interp(&lowered, &inputs).unwrap();
    let e = Checker::new(&w, &inputs).check(&out);
    assert!(e.is_right(), "error {e}");
    config.0.last_mut().unwrap().1 = 2;
    let e = w.lower_with("implicit-gemm", Some(&config)).unwrap_err();
    assert!(e.to_string().contains("`fuse` = 2 must be 0 or 1"), "{e}");
}

#[test]
fn shapes_that_make_no_convolution_are_named() {
    let e = Shape::parse("conv2d", "h=2,w=2,r=5,s=5,pad=1").unwrap_err();
    assert!(
        e.to_string().contains("larger than the padded 4x4 input"),
        "{e}"
    );
    let e = Shape::parse("conv2d", "stride=0").unwrap_err();
    assert!(e.to_string().contains("`stride` = 0"), "{e}");
    // Padding may be 0.
    assert!(Shape::parse("conv2d", "pad=0").is_ok());
}
