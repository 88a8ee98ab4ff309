//! Depthwise convolutions through the whole model compiler in f32 NCHW, f32 NHWC and
//! f16 NHWC: the depthwise template over its own buffers (f32 NCHW) and over the
//! group's views (f16 loads, NHWC walked channels fastest, an inlined prologue), with
//! its bias, ReLU6 and residual epilogue, at odd sizes (1, 3, 96 and 97 channels; 1×1
//! to 56×56 images; 3×3, 5×5 stride 2 and 7×7 windows; batch 1 and 2), checked against
//! the graph's float64 reference on the interpreter and on wgpu (lavapipe in CI); the
//! CUDA kernels compiled by NVRTC where it is installed.

use weft_codegen_common::TargetLimits;
use weft_graph::op::{Binary, Conv, LayerNorm, Op, Transpose, Unary};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;
use weft_testkit::random::Values;

/// One depthwise convolution to check: `[batch, channels, h, w]`, window `k`, `stride`,
/// and whether its input is stored (read by a second node too) or an inlined prologue.
#[derive(Clone, Copy, Debug)]
struct Case {
    x: [usize; 4],
    k: usize,
    stride: usize,
    stored_input: bool,
}

const fn case(x: [usize; 4], k: usize, stride: usize, stored_input: bool) -> Case {
    Case {
        x,
        k,
        stride,
        stored_input,
    }
}

/// Every channel count, image, window and batch of the brief at least once, in mixed
/// combinations (each a few seconds at most on the interpreter).
const CASES: [Case; 16] = [
    case([1, 1, 1, 1], 3, 1, true),
    case([2, 3, 28, 30], 7, 1, false),
    case([1, 96, 13, 17], 5, 2, true),
    case([2, 97, 29, 31], 7, 2, true),
    case([1, 97, 7, 7], 3, 2, false),
    case([1, 3, 56, 56], 7, 1, true),
    case([2, 1, 13, 17], 5, 2, false),
    case([1, 96, 56, 56], 3, 1, true),
    case([2, 96, 1, 1], 7, 1, false),
    case([1, 97, 56, 56], 5, 2, true),
    // 14² at batch 4: 784 pixels over the batch but 3920 outputs, the direct rule's.
    case([4, 5, 14, 14], 7, 1, false),
    // 28² × 192 (ConvNeXt-tiny's second stage at batch 1): 150528 outputs, the
    // template's; 7² × 48 at batch 64 the same count.
    case([1, 192, 28, 28], 7, 1, false),
    case([64, 48, 7, 7], 7, 1, false),
    // 3×3 and 5×5 over two images at stride 1, 150528 and 301056 outputs: the template
    // where the target takes a register cap (CUDA's register windows); at stride 2 the
    // direct rule's everywhere.
    case([2, 96, 28, 28], 3, 1, true),
    case([2, 48, 56, 56], 5, 1, false),
    case([2, 96, 56, 56], 3, 2, false),
];

/// `y = relu(x)`; `d = clip(dwconv(y) + bias, 0, 6)`. Where the input is stored, a
/// second output `y · 0.5` (so `y` is a tensor of its own, NHWC f16 in f16, not the
/// depthwise's prologue) and, at stride 1, the output `d + y` (a residual epilogue);
/// otherwise the output `d`, `y` inlined into the depthwise's loads.
fn graph(c: &Case) -> Graph {
    let mut v = Values(31 + c.x.iter().sum::<usize>() as u64);
    let [_, ch, _, _] = c.x;
    let mut b = GraphBuilder::new("dw");
    let x = b.input("x", &c.x, DType::F32);
    let y = b.relu("relu", x).unwrap();
    let scale = (3.0 / (c.k * c.k) as f32).sqrt();
    let w = b.weight("dw.w", v.array(&[ch, 1, c.k, c.k], scale));
    let bias = b.weight("dw.b", v.array(&[ch], 0.3));
    let pad = (c.k - 1) / 2;
    let conv = Conv::new(c.stride, pad).grouped(ch);
    let d = b.conv("dw", y, w, Some(bias), conv).unwrap();
    let d = b.clip("relu6", d, 0.0, 6.0).unwrap();
    let out = if c.stride == 1 && c.stored_input {
        b.add("residual", d, y).unwrap()
    } else {
        d
    };
    b.output(out);
    if c.stored_input {
        let half = b.weight("half", v.array(&[1], 0.0).mapv(|_| 0.5));
        let z = b.binary("half_y", Binary::Mul, y, half).unwrap();
        b.output(z);
    }
    b.finish().unwrap()
}

/// Whether the rule takes the template over views for a depthwise convolution read
/// through views: at least 28² × 192 outputs, pixels counted over the batch, and windows
/// of 7 or more — or, on a target with a register cap, several images at stride 1 (the
/// direct rule is faster otherwise, measured on the H200).
fn views_template(c: &Case, register_cap: bool) -> bool {
    let out = |n: usize| n.div_ceil(c.stride);
    let window = c.k >= 7 || (register_cap && c.x[0] >= 2 && c.stride == 1);
    window && c.x[0] * c.x[1] * out(c.x[2]) * out(c.x[3]) >= 28 * 28 * 192
}

/// What `weft model graph` must say of the depthwise group in `precision`.
fn expected(c: &Case, precision: Precision, register_cap: bool) -> &'static str {
    match precision {
        // One channel, one group: a dense convolution.
        _ if c.x[1] == 1 => "implicit-gemm",
        Precision::F32 if c.stored_input => "depthwise template: ",
        _ if !views_template(c, register_cap) => "rule: direct convolution",
        Precision::F32 => "depthwise template over views (NCHW, f32 loads",
        Precision::F32ChannelsLast => "depthwise template over views (NHWC, f32 loads",
        Precision::F16 => "depthwise template over views (NHWC, f16 loads",
    }
}

/// The largest error of the case's outputs against float64, relative to the largest
/// magnitude (at least 1).
fn error(dev: &mut dyn Device, c: &Case, precision: Precision) -> f64 {
    let g = graph(c);
    let opts = CompileOptions::default().with_precision(precision);
    let limits = dev.limits();
    let model = CompiledModel::compile(&g, &limits, &opts).unwrap();
    let text = model.show();
    let want = expected(c, precision, limits.register_cap);
    assert!(text.contains(want), "{c:?}\n{text}");
    if want != "rule: direct convolution" {
        assert!(!text.contains("direct convolution"), "{c:?}\n{text}");
    }
    let loaded = model.load(dev).unwrap();
    let x = Values(5).array(&c.x, 1.0);
    let got = loaded.run(dev, std::slice::from_ref(&x)).unwrap();
    loaded.free(dev);
    let want = evaluate(&g, &[x.mapv(f64::from)]).unwrap();
    let mut worst = 0.0f64;
    for (got, want) in got.iter().zip(&want) {
        assert_eq!(got.shape(), want.shape());
        let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let err = got.iter().zip(want.iter()).fold(0.0f64, |m, (a, b)| {
            let d = (f64::from(*a) - b).abs();
            if d.is_nan() { f64::INFINITY } else { m.max(d) }
        });
        worst = worst.max(err / scale);
    }
    worst
}

/// f32: the sums are exact to f32's rounding of ≤ 49 products.
const F32_TOLERANCE: f64 = 1e-5;
/// f16: the input, the filter, `y` and the output each rounded once to 11 bits, the
/// sum in f32 — a few 1e-3 at most; a wrong index is an error of order 1.
const F16_TOLERANCE: f64 = 5e-3;

fn check_on(dev: &mut dyn Device) {
    let f16 = dev.limits().f16;
    for c in &CASES {
        let mut line = format!("{:?} k{} s{} on {}:", c.x, c.k, c.stride, dev.name());
        for precision in [Precision::F32, Precision::F32ChannelsLast, Precision::F16] {
            if precision == Precision::F16 && !f16 {
                continue;
            }
            let err = error(dev, c, precision);
            let tolerance = if precision == Precision::F16 {
                F16_TOLERANCE
            } else {
                F32_TOLERANCE
            };
            line += &format!(" {precision:?} {err:.1e}");
            assert!(err <= tolerance, "{c:?} {precision:?}: error {err:.2e}");
        }
        eprintln!("{line}");
    }
}

#[test]
fn depthwise_convolutions_run_on_the_interpreter() {
    if let Some(mut dev) = open_or_skip("cpu") {
        check_on(dev.as_mut());
    }
}

/// The 3×3 and 5×5 cases over two images on CUDA's limits (a register cap: the
/// template's register windows at stride 1), run on the interpreter emulating them, f16
/// and f32 channels-last.
#[test]
fn small_windows_on_cudas_limits_run_on_the_interpreter() {
    let limits = TargetLimits::cuda();
    assert!(limits.register_cap);
    let mut dev = weft_runtime::cpu::CpuDevice::emulating(limits);
    let cases = CASES
        .iter()
        .filter(|c| c.k < 7 && c.x[0] >= 2 && c.x[1] > 1);
    let mut templates = 0;
    for c in cases {
        templates += usize::from(views_template(c, true));
        for (precision, tolerance) in [
            (Precision::F16, F16_TOLERANCE),
            (Precision::F32ChannelsLast, F32_TOLERANCE),
        ] {
            let err = error(&mut dev, c, precision);
            eprintln!("{:?} k{} s{}: {precision:?} {err:.1e}", c.x, c.k, c.stride);
            assert!(err <= tolerance, "{c:?} {precision:?}: error {err:.2e}");
        }
    }
    assert_eq!(templates, 2, "the two stride-1 cases take the template");
}

#[test]
fn depthwise_convolutions_run_on_wgpu() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        check_on(dev.as_mut());
    }
}

#[test]
fn depthwise_convolutions_run_on_cuda() {
    if let Some(mut dev) = open_or_skip("cuda") {
        check_on(dev.as_mut());
    }
}

/// The depthwise kernels in f16 NHWC and f32 NCHW, as CUDA C for the H100's profile,
/// compile under NVRTC (skipped with the reason printed where NVRTC is absent).
#[test]
fn depthwise_kernels_compile_under_nvrtc() {
    let limits = TargetLimits::cuda();
    let opts = weft_codegen_cuda::CudaOptions {
        limits: limits.clone(),
    };
    let (mut checked, mut half_loads) = (0, false);
    for c in [CASES[11], CASES[12]] {
        for precision in [Precision::F32, Precision::F16] {
            let g = graph(&c);
            let copts = CompileOptions::default().with_precision(precision);
            let model = CompiledModel::compile(&g, &limits, &copts).unwrap();
            for group in &model.groups {
                let emitted = weft_codegen_cuda::emit_lowered(&group.kernels, &opts).unwrap();
                // The shared tile's configs stage `A_smem`; the NHWC rule's register
                // windows (CUDA's) hold each thread's taps in `w_reg`.
                let depthwise =
                    emitted.source.contains("A_smem") || emitted.source.contains("w_reg[");
                half_loads |= depthwise && emitted.source.contains("__half2float");
                match weft_codegen_cuda::nvrtc::check(&emitted.source) {
                    Ok(weft_codegen_common::testing::Checked::Passed) => {
                        checked += usize::from(depthwise)
                    }
                    Ok(_) => return,
                    Err(e) => panic!("{e}\n{}", emitted.source),
                }
            }
        }
    }
    assert_eq!(checked, 4, "one depthwise kernel a case and precision");
    assert!(half_loads, "the f16 kernels load half values");
}

/// ConvNeXt's block as torchvision's export writes it, at `[n, c, h, w]`: a 7×7
/// depthwise convolution, a transpose to `[n, h, w, c]`, a LayerNorm over channels, a
/// pointwise MatMul to 4c, GELU, a MatMul back, a layer scale, the transpose back and
/// the residual add (after a 1×1 stem, so that the block's input is an activation).
fn convnext_block([n, c, h, w]: [usize; 4]) -> Graph {
    let mut v = Values(17);
    let mut b = GraphBuilder::new("convnext_block");
    let x = b.input("x", &[n, 3, h, w], DType::F32);
    let w0 = b.weight("stem.w", v.array(&[c, 3, 1, 1], 0.8));
    let x = b.conv("stem", x, w0, None, Conv::new(1, 0)).unwrap();
    let wd = b.weight("dw.w", v.array(&[c, 1, 7, 7], 0.25));
    let bd = b.weight("dw.b", v.array(&[c], 0.1));
    let d = b
        .conv("dw", x, wd, Some(bd), Conv::new(1, 3).grouped(c))
        .unwrap();
    let perm = |p: [usize; 4]| Op::Transpose(Transpose { perm: p.to_vec() });
    let t = b.node("to_last", perm([0, 2, 3, 1]), &[d]).unwrap();
    let scale = b.weight("ln.s", v.array(&[c], 0.3).mapv(|s| s + 1.0));
    let shift = b.weight("ln.b", v.array(&[c], 0.2));
    let ln = LayerNorm {
        axis: 3,
        epsilon: 1e-6,
        rms: false,
    };
    let t = b.node("ln", Op::LayerNorm(ln), &[t, scale, shift]).unwrap();
    let w1 = b.weight("fc1.w", v.array(&[c, 4 * c], (3.0 / c as f32).sqrt()));
    let t = b.node("fc1", Op::MatMul, &[t, w1]).unwrap();
    let t = b.unary("gelu", Unary::Gelu { tanh: false }, t).unwrap();
    let w2 = b.weight("fc2.w", v.array(&[4 * c, c], (0.75 / c as f32).sqrt()));
    let t = b.node("fc2", Op::MatMul, &[t, w2]).unwrap();
    let gamma = b.weight("gamma", v.array(&[c], 0.5));
    let t = b.binary("layer_scale", Binary::Mul, t, gamma).unwrap();
    let t = b.node("to_first", perm([0, 3, 1, 2]), &[t]).unwrap();
    let y = b.add("residual", x, t).unwrap();
    b.output(y);
    b.finish().unwrap()
}

/// The block in f32, f32 NHWC and f16: right against float64, and its transposes cost
/// no kernel of their own (the first fused into the depthwise's stores, the second into
/// the second MatMul's, the tensors between them row-major `[n, h, w, c]`).
fn check_convnext_on(dev: &mut dyn Device) {
    for shape in [[1, 96, 7, 7], [2, 97, 13, 17]] {
        let g = convnext_block(shape);
        for precision in [Precision::F32, Precision::F32ChannelsLast, Precision::F16] {
            if precision == Precision::F16 && !dev.limits().f16 {
                continue;
            }
            let opts = CompileOptions::default().with_precision(precision);
            let model = CompiledModel::compile(&g, &dev.limits(), &opts).unwrap();
            let text = model.show();
            assert!(!text.contains("[injective]"), "{text}");
            assert!(text.contains("epilogue: to_last:Transpose"), "{text}");
            assert!(text.contains("to_first:Transpose"), "{text}");
            if precision != Precision::F32 {
                // Row-major [n, h, w, c] between the transposes: no `nhwc` on the
                // LayerNorm's output.
                let ln = text.lines().find(|l| l.contains("] ln:")).unwrap();
                assert!(!ln.contains("nhwc"), "{text}");
            }
            let x = Values(3).array(&[shape[0], 3, shape[2], shape[3]], 1.0);
            let loaded = model.load(dev).unwrap();
            let got = loaded.run(dev, std::slice::from_ref(&x)).unwrap();
            loaded.free(dev);
            let want = evaluate(&g, &[x.mapv(f64::from)]).unwrap();
            let scale = want[0].iter().fold(1.0f64, |m, v| m.max(v.abs()));
            let err = got[0].iter().zip(want[0].iter()).fold(0.0f64, |m, (a, b)| {
                let d = (f64::from(*a) - b).abs();
                if d.is_nan() { f64::INFINITY } else { m.max(d) }
            }) / scale;
            eprintln!(
                "ConvNeXt block {shape:?} {precision:?} on {}: {err:.1e}",
                dev.name()
            );
            // f16: LayerNorm, two products of up to 388 terms and GELU between roundings.
            let tolerance = if precision == Precision::F16 {
                1e-2
            } else {
                1e-4
            };
            assert!(err <= tolerance, "{shape:?} {precision:?}: error {err:.2e}");
        }
    }
}

#[test]
fn a_convnext_block_runs_on_the_interpreter() {
    if let Some(mut dev) = open_or_skip("cpu") {
        check_convnext_on(dev.as_mut());
    }
}

#[test]
fn a_convnext_block_runs_on_wgpu() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        check_convnext_on(dev.as_mut());
    }
}
