//! The fp16 implicit-GEMM convolutions (`conv2d-f16` NHWC, `conv2d-f16-bias-relu`,
//! `conv2d-f16-nchw`): right at odd sizes — channels, sizes and `C·R·S` that are not
//! multiples of 16 or 8, strides, paddings, 1×1 kernels, N > 1 — against the float64
//! reference with an fp16-aware tolerance, for tensor-core (16), simdgroup (8) and
//! CUDA-core (0) configs, in the interpreter (which also checks races, bounds and the
//! warp-uniformity of every fragment operation).

use proptest::prelude::*;
use weft_codegen_common::TargetLimits;
use weft_kernels::{Config, matmul_f16};
use weft_ops::check::Checker;
use weft_ops::{Shape, Workload};

const OPS: [&str; 3] = ["conv2d-f16", "conv2d-f16-bias-relu", "conv2d-f16-nchw"];

/// `[n, c, h, w, k, r, s, stride, pad]`
fn workload(op: &str, d: [i64; 9]) -> Workload {
    let names = ["n", "c", "h", "w", "k", "r", "s", "stride", "pad"];
    let text: Vec<String> = names
        .iter()
        .zip(d)
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    let shape = Shape::parse(op, &text.join(",")).unwrap();
    Workload::new(op, &shape).unwrap()
}

/// CUDA's limits with matrix units of the square sizes `mma` (f16 in, f32 out).
fn resources(mma: &[i64]) -> TargetLimits {
    use weft_codegen_common::MatrixUnit;
    use weft_ir::dtype::DType;
    TargetLimits {
        matrix_units: mma
            .iter()
            .map(|&s| MatrixUnit::new(s as u32, s as u32, s as u32, DType::F16, DType::F32))
            .collect(),
        ..TargetLimits::cuda()
    }
}

fn check(w: &Workload, schedule: &str, config: Option<&Config>, seed: u64) -> Result<(), String> {
    let what = format!(
        "{} {schedule} {} at {}",
        w.op.name,
        config.map_or(String::new(), |c| c.to_string()),
        w.shape
    );
    let lowered = w
        .lower_with(schedule, config)
        .map_err(|e| format!("{what}: {e}"))?;
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

#[test]
fn the_defaults_are_right_at_odd_sizes() {
    let shapes = [
        [2, 3, 17, 19, 5, 3, 3, 2, 1],
        [1, 5, 9, 7, 3, 3, 2, 1, 0],
        [1, 16, 11, 13, 24, 3, 3, 1, 1],
        [3, 8, 5, 5, 17, 1, 1, 1, 0],
        [1, 1, 1, 1, 1, 1, 1, 1, 0],
        [1, 24, 7, 6, 40, 3, 3, 2, 2],
    ];
    for op in OPS {
        for mma in [&[16][..], &[8], &[]] {
            let config = matmul_f16::default_config(&resources(mma));
            for d in shapes {
                check(&workload(op, d), "implicit-gemm", Some(&config), 3).unwrap();
            }
        }
    }
}

#[test]
fn the_direct_baseline_is_right() {
    for op in OPS {
        check(
            &workload(op, [2, 3, 9, 7, 5, 3, 3, 2, 1]),
            "direct",
            None,
            5,
        )
        .unwrap();
    }
}

/// Channels a multiple of 8 in NHWC: the im2col gather is one 16-byte load per pixel
/// and 8 channels (the padding test shared by all of them), on every backend's source.
#[test]
fn nhwc_gathers_eight_channels_per_load() {
    let w = workload("conv2d-f16", [1, 64, 56, 56, 64, 3, 3, 1, 1]);
    let lowered = w.lower("implicit-gemm").unwrap();
    let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default())
        .unwrap()
        .source;
    assert!(
        cuda.contains("*(uint4*)(A_ldg + p * 8) = *(const uint4*)(x + "),
        "{cuda}"
    );
    assert!(cuda.contains("weft_mma_f32(acc["), "{cuda}");
    assert!(cuda.contains("weft_ldsm_tile(a_frag["), "{cuda}");
    // NCHW gathers element by element: the input's channels are a plane apart.
    let w = workload("conv2d-f16-nchw", [1, 64, 56, 56, 64, 3, 3, 1, 1]);
    let lowered = w.lower("implicit-gemm").unwrap();
    let cuda = weft_codegen_cuda::emit_lowered(&lowered, &Default::default())
        .unwrap()
        .source;
    assert!(!cuda.contains("(const uint4*)(x + "), "{cuda}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn configs_across_the_spaces_are_right(
        op in 0usize..3,
        mma in 0usize..3,
        ci in any::<prop::sample::Index>(),
        n in 1i64..3,
        c in prop::sample::select(vec![1i64, 3, 8, 13, 16, 24]),
        hw in (1i64..12, 1i64..12),
        k in 1i64..40,
        rs in (1i64..4, 1i64..4),
        stride in 1i64..3,
        pad in 0i64..3,
        seed in 0u64..1000,
    ) {
        let (h, w) = (hw.0 + rs.0, hw.1 + rs.1);
        let all = matmul_f16::space(&resources([&[16][..], &[8], &[]][mma]));
        let config = &all[ci.index(all.len())];
        let wl = workload(OPS[op], [n, c, h, w, k, rs.0, rs.1, stride, pad]);
        check(&wl, "implicit-gemm", Some(config), seed).map_err(TestCaseError::fail)?;
    }
}
