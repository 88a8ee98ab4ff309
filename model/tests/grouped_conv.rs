//! Grouped convolutions (`1 < groups`, not depthwise) through the whole model compiler on
//! the interpreter and on wgpu (lavapipe in CI), f32 NCHW, f32 NHWC and f16 NHWC, checked
//! against the graph's float64 reference: the batched implicit GEMM of
//! `weft_kernels::grouped_conv`, narrow groups packed into block-diagonal products, with
//! its epilogue (bias, a folded BatchNorm, ReLU, a residual) fused. Odd sizes: 2, 3, 13,
//! 32 and 64 groups of 1, 4, 8 and 13 input channels, strides 1 and 2, asymmetric
//! padding, dilation, batches 1 and 3, pixel counts no tile divides, and a last pack of
//! fewer groups than the others.

use ndarray::{ArrayD, IxDyn};
use weft_codegen_common::TargetLimits;
use weft_codegen_common::testing::Checked;
use weft_graph::op::{Binary, Conv, Unary};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;
use weft_testkit::random::Values;

/// One grouped convolution: input `[n, groups·cg, h, w]`, `groups·kg` outputs, a
/// `r × r` window.
#[derive(Clone, Copy, Debug)]
struct Case {
    n: usize,
    groups: usize,
    cg: usize,
    kg: usize,
    hw: [usize; 2],
    r: usize,
    conv: Conv,
}

const fn conv(stride: usize, pads: [usize; 4], dilation: usize) -> Conv {
    Conv {
        strides: [stride, stride],
        pads,
        dilations: [dilation, dilation],
        groups: 1,
    }
}

const CASES: [Case; 7] = [
    // Two groups of 4 → 4 channels, batch 3, a residual: both packed into one product.
    Case {
        n: 3,
        groups: 2,
        cg: 4,
        kg: 4,
        hw: [9, 11],
        r: 3,
        conv: conv(1, [1, 1, 1, 1], 1),
    },
    // Three groups of 13 → 5, stride 2, asymmetric padding.
    Case {
        n: 1,
        groups: 3,
        cg: 13,
        kg: 5,
        hw: [11, 10],
        r: 3,
        conv: conv(2, [1, 0, 1, 1], 1),
    },
    // ResNeXt's first stage in small: 32 groups of 4, packed four a product.
    Case {
        n: 1,
        groups: 32,
        cg: 4,
        kg: 4,
        hw: [7, 9],
        r: 3,
        conv: conv(1, [1, 1, 1, 1], 1),
    },
    // A channel multiplier (64 groups of 1 → 2), stride 2, dilation 2, batch 3.
    Case {
        n: 3,
        groups: 64,
        cg: 1,
        kg: 2,
        hw: [9, 8],
        r: 3,
        conv: conv(2, [2, 2, 2, 2], 2),
    },
    // RegNet's 13 groups of 8 at stride 2: 7 products, the last of one group.
    Case {
        n: 1,
        groups: 13,
        cg: 8,
        kg: 8,
        hw: [13, 13],
        r: 3,
        conv: conv(2, [1, 1, 1, 1], 1),
    },
    // Wide groups (one a product), a 1×1 window.
    Case {
        n: 3,
        groups: 2,
        cg: 8,
        kg: 16,
        hw: [5, 7],
        r: 1,
        conv: conv(1, [0, 0, 0, 0], 1),
    },
    // Dilated, 3 groups of 4 → 8.
    Case {
        n: 1,
        groups: 3,
        cg: 4,
        kg: 8,
        hw: [10, 9],
        r: 3,
        conv: conv(1, [2, 2, 2, 2], 2),
    },
];

/// `relu(bn(conv(t) + bias))`, plus `t` where the shapes agree, where `t = x · 0.5`
/// is stored (a second output reads it too): an activation, channels last where the
/// precision lays activations out so (the graph's input stays as the user gives it).
fn graph(case: &Case) -> Graph {
    let mut v = Values(31);
    let mut b = GraphBuilder::new("grouped");
    let (c, k) = (case.groups * case.cg, case.groups * case.kg);
    let input = b.input("x", &[case.n, c, case.hw[0], case.hw[1]], DType::F32);
    let half = b.weight("half", ArrayD::from_elem(IxDyn(&[1]), 0.5));
    let x = b.binary("scale", Binary::Mul, input, half).unwrap();
    let side = b.unary("side", Unary::Neg, x).unwrap();
    b.output(side);
    let scale = (3.0 / (case.cg * case.r * case.r) as f32).sqrt();
    let w = b.weight("w", v.array(&[k, case.cg, case.r, case.r], scale));
    let bias = b.weight("b", v.array(&[k], 0.2));
    let cv = case.conv.grouped(case.groups);
    let y = b.conv("gconv", x, w, Some(bias), cv).unwrap();
    let gamma = b.weight("bn.g", v.array(&[k], 0.5).mapv(|x| x + 1.0));
    let beta = b.weight("bn.b", v.array(&[k], 0.2));
    let mean = b.weight("bn.m", v.array(&[k], 0.2));
    let var = b.weight("bn.v", v.array(&[k], 0.4).mapv(|x| x + 1.0));
    let y = b.batch_norm("bn", y, gamma, beta, mean, var, 1e-5).unwrap();
    let mut y = b.relu("relu", y).unwrap();
    let same = b.graph().tensor(y).shape == b.graph().tensor(x).shape;
    if same {
        y = b.add("residual", y, x).unwrap();
    }
    b.output(y);
    b.finish().unwrap()
}

/// Normalized error allowed in f32: sums of at most 13·9 products.
const F32_TOLERANCE: f64 = 1e-5;
/// Allowed in f16 storage: the input, the filter (with the folded BatchNorm) and the
/// output each rounded to 11 significant bits; a wrong tap or channel is an error of
/// order 1.
const F16_TOLERANCE: f64 = 4e-3;

/// The largest normalized error of `case` compiled in `precision` on `dev`; checks that
/// the grouped schedule took it.
fn error(dev: &mut dyn Device, case: &Case, precision: Precision) -> f64 {
    let g = graph(case);
    let model = CompiledModel::compile(
        &g,
        &dev.limits(),
        &CompileOptions::default().with_precision(precision),
    )
    .unwrap();
    let text = model.show();
    let layout = match precision {
        Precision::F32 => "(NCHW)",
        _ => "(NHWC)",
    };
    let schedule = format!("grouped implicit-gemm {layout}, {} groups", case.groups);
    assert!(text.contains(&schedule), "{case:?}\n{text}");
    assert!(!text.contains("direct convolution"), "{case:?}\n{text}");
    let loaded = model.load(dev).unwrap();
    let mut v = Values(5);
    let x = v.array(
        &[case.n, case.groups * case.cg, case.hw[0], case.hw[1]],
        1.0,
    );
    let got = loaded.run(dev, std::slice::from_ref(&x)).unwrap();
    loaded.free(dev);
    let want = evaluate(&g, &[x.mapv(f64::from)]).unwrap();
    let mut worst = 0.0f64;
    for (got, want) in got.iter().zip(&want) {
        assert_eq!(got.shape(), want.shape());
        let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let err = got
            .iter()
            .zip(want.iter())
            .map(|(a, b)| (f64::from(*a) - b).abs())
            .fold(
                0.0f64,
                |m, d| if d.is_nan() { f64::INFINITY } else { m.max(d) },
            );
        worst = worst.max(err / scale);
    }
    worst
}

fn check_on(dev: &mut dyn Device) {
    let mut precisions = vec![
        (Precision::F32, F32_TOLERANCE),
        (Precision::F32ChannelsLast, F32_TOLERANCE),
    ];
    if dev.limits().f16 {
        precisions.push((Precision::F16, F16_TOLERANCE));
    } else {
        eprintln!(
            "{} has no f16: the f16 convolutions are not run",
            dev.name()
        );
    }
    for case in &CASES {
        for &(precision, tolerance) in &precisions {
            let err = error(dev, case, precision);
            eprintln!("{case:?} in {precision:?} on {}: {err:.2e}", dev.name());
            assert!(
                err <= tolerance,
                "{case:?} in {precision:?}: error {err:.2e}"
            );
        }
    }
}

#[test]
fn grouped_convolutions_run_on_the_interpreter() {
    if let Some(mut dev) = open_or_skip("cpu") {
        check_on(dev.as_mut());
    }
}

#[test]
fn grouped_convolutions_run_on_wgpu() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        check_on(dev.as_mut());
    }
}

#[test]
fn grouped_convolutions_run_on_cuda() {
    if let Some(mut dev) = open_or_skip("cuda") {
        check_on(dev.as_mut());
    }
}

/// The grouped convolutions' kernels as CUDA C, f16 on tensor cores (`mma.sync`) and
/// f32 on CUDA cores, epilogues fused, and NVRTC compiles them (skipped, with the reason
/// printed, where NVRTC is absent).
#[test]
fn grouped_convolutions_compile_for_cuda() {
    let limits = TargetLimits::cuda();
    let opts = weft_codegen_cuda::CudaOptions {
        limits: limits.clone(),
    };
    // NVRTC's absence is said once; the kernels are still emitted and looked at.
    let mut nvrtc = true;
    for case in &CASES {
        for precision in [Precision::F32ChannelsLast, Precision::F16] {
            let model = CompiledModel::compile(
                &graph(case),
                &limits,
                &CompileOptions::default().with_precision(precision),
            )
            .unwrap();
            let grouped: Vec<_> = model
                .groups
                .iter()
                .filter(|g| g.schedule.contains("grouped implicit-gemm"))
                .collect();
            assert_eq!(grouped.len(), 1, "{case:?}");
            let emitted = weft_codegen_cuda::emit_lowered(&grouped[0].kernels, &opts).unwrap();
            let src = &emitted.source;
            if precision == Precision::F16 {
                assert!(src.contains("mma.sync"), "{case:?}: no tensor cores\n{src}");
            }
            if nvrtc {
                match weft_codegen_cuda::nvrtc::check(src) {
                    Ok(Checked::Passed) => {}
                    Ok(_) => nvrtc = false, // skipped, with the reason printed
                    Err(e) => panic!("{case:?} in {precision:?}: {e}"),
                }
            }
        }
    }
}
