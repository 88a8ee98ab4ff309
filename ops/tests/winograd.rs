//! Winograd F(2×2, 3×3): right at odd shapes (seed 003's 122 among them, tiles past the
//! image's edge, one image of 1×1 output) for configs across the batched product's space,
//! in the interpreter, which also checks races and bounds; four kernels of one function;
//! the transforms emitted as constant arithmetic.

use proptest::prelude::*;
use weft_codegen_common::TargetLimits;
use weft_kernels::matmul;
use weft_ops::check::Checker;
use weft_ops::{Shape, Workload};

fn workload(text: &str) -> Workload {
    Workload::new(
        "winograd-conv2d",
        &Shape::parse("winograd-conv2d", text).unwrap(),
    )
    .unwrap()
}

/// The 1, 8, 13, 11, 4; odd output sizes with and without padding; one output
/// pixel; a batch; channels that fit no vector.
const SHAPES: [&str; 6] = [
    "n=1,c=8,h=13,w=11,k=4",
    "n=2,c=3,h=17,w=19,k=5,pad=0",
    "n=1,c=5,h=3,w=3,k=3,pad=0",
    "n=3,c=4,h=7,w=6,k=8,pad=1",
    "n=1,c=2,h=1,w=1,k=1,pad=1",
    "n=1,c=6,h=12,w=12,k=7,pad=2",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn winograd_is_right_for_configs_across_the_space(
        ci in any::<prop::sample::Index>(),
        si in any::<prop::sample::Index>(),
        seed in 0u64..1000,
    ) {
        let configs = matmul::space(&TargetLimits::cuda());
        let config = &configs[ci.index(configs.len())];
        let w = workload(SHAPES[si.index(SHAPES.len())]);
        let lowered = w.lower_with("winograd", Some(config)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(lowered.kernels.len(), 4);
        let inputs = w.random_inputs(seed);
        let out = w.run_interp(&lowered, &inputs).map_err(|e| TestCaseError::fail(format!("{config}: {e}")))?;
        let e = Checker::new(&w, &inputs).check(&out);
        prop_assert!(e.is_right(), "{} at {}: error {}", config, w.shape, e);
    }
}

/// Seed 003's 122: 61×61 tiles per channel, so the batched product's row length (3721)
/// is padded to 3724 and the last tile row and column are partial... at a size the
/// interpreter runs: 1 channel in, 2 out.
#[test]
fn winograd_is_right_at_size_122() {
    let w = workload("n=1,c=1,h=122,w=122,k=2");
    let lowered = w.lower("winograd").unwrap();
    let inputs = w.random_inputs(7);
    let out = w.run_interp(&lowered, &inputs).unwrap();
    let e = Checker::new(&w, &inputs).check(&out);
    assert!(e.is_right(), "error {e}");
}

/// The transform matrices are folded into sums, differences and halvings: the emitted
/// CUDA has no select but predicated loads, and no constant-matrix table.
#[test]
fn transforms_are_constant_arithmetic() {
    let w = workload("n=1,c=8,h=13,w=11,k=4");
    let lowered = w.lower("winograd").unwrap();
    assert_eq!(lowered.kernels.len(), 4);
    let opts = weft_codegen_cuda::CudaOptions::default();
    for kernel in [0, 1, 3] {
        let cuda = weft_codegen_cuda::emit(&lowered.kernels[kernel], &opts)
            .unwrap()
            .source;
        // The only selects are the input's predicated loads (padding, tiles past the edge).
        let selects = cuda.lines().filter(|l| l.contains(" ? "));
        for line in selects {
            assert!(
                line.contains("? x["),
                "kernel {kernel} has a select: {line}"
            );
        }
        assert!(
            !cuda.contains("[16]"),
            "kernel {kernel} has a table:\n{cuda}"
        );
    }
    let filter = weft_codegen_cuda::emit(&lowered.kernels[0], &opts)
        .unwrap()
        .source;
    assert!(filter.contains("* 0.5f"), "{filter}");
}

#[test]
fn winograd_takes_only_3x3_stride_1() {
    let e = Shape::parse("winograd-conv2d", "r=5,s=5").unwrap_err();
    assert!(e.to_string().contains("3x3 kernel at stride 1"), "{e}");
    let e = Shape::parse("winograd-conv2d", "stride=2").unwrap_err();
    assert!(e.to_string().contains("not 3x3 at stride 2"), "{e}");
}
