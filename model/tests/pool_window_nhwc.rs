//! Windowed pools over channels-last images, a vector of channels a thread (`model/src/
//! lower/pool_vec.rs`: each tap one 16-byte load of 8 halves or 4 floats), against the
//! graph's float64 reference on the interpreter under CUDA's limits: max and average
//! pools (padding counted and not), 3×3 at stride 1 pad 1 and at stride 2 pad 0, over
//! 17×13 images of 24, 20 and 7 channels, f16 and f32, one image and three. Where the
//! channels are no multiple of the lanes the reduction rule keeps the pool; on Vulkan
//! (lavapipe) the same vectors, as WGSL writes them, and under Metal's and ROCm's limits.

use std::process::Command;

use ndarray::ArrayD;
use weft_codegen_common::TargetLimits;
use weft_graph::op::{Conv, Op, Pool, PoolKind, Unary};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::lower::{Horizontal, POOL_VEC_ENV};
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_runtime::cpu::CpuDevice;
use weft_testkit::compare::normalized_error;
use weft_testkit::devices::open_or_skip;
use weft_testkit::random::Values;

/// Channels of the image read by 1×1 convolutions into the pools' input.
const IN_CHANNELS: usize = 5;

/// The schedule the vector path reports, at 8 (f16) and 4 (f32) channels a thread.
const VEC_F16: &str = "rule: reduction, 8 channels a thread by 16-byte loads";
const VEC_F32: &str = "rule: reduction, 4 channels a thread by 16-byte loads";
/// What the reduction rule reports.
const RULE: &str = "rule: reduction, one thread per output";

/// One pool: its kind, whether an average counts the padding, window, stride, padding.
#[derive(Clone, Copy, Debug)]
struct Case {
    kind: PoolKind,
    count_include_pad: bool,
    kernel: usize,
    stride: usize,
    pad: usize,
}

/// Max, average without and with the padding counted, each at 3×3 stride 1 pad 1 (what
/// Inception-v3's branches pool with) and 3×3 stride 2 pad 0 (its reduction blocks').
fn cases() -> Vec<Case> {
    let kinds = [
        (PoolKind::Max, false),
        (PoolKind::Average, false),
        (PoolKind::Average, true),
    ];
    let mut out = Vec::new();
    for (kind, count_include_pad) in kinds {
        for (kernel, stride, pad) in [(3, 1, 1), (3, 2, 0)] {
            out.push(Case {
                kind,
                count_include_pad,
                kernel,
                stride,
                pad,
            });
        }
    }
    out
}

/// `[batch, IN_CHANNELS, h, w]` through a 1×1 convolution to `channels` (stored channels
/// last by the precision pass), then each of `cases` pooling that image, each pool
/// negated (so that the pool's output is a tensor of the graph's inside, stored channels
/// last, as a pool before a convolution is; the graph's outputs are f32 NCHW).
fn net(batch: usize, channels: usize, [h, w]: [usize; 2], cases: &[Case]) -> Graph {
    let mut v = Values(71);
    let mut b = GraphBuilder::new("pools");
    let x = b.input("x", &[batch, IN_CHANNELS, h, w], DType::F32);
    let wt = b.weight("w", v.array(&[channels, IN_CHANNELS, 1, 1], 0.4));
    let y = b.conv("conv", x, wt, None, Conv::new(1, 0)).unwrap();
    for (i, c) in cases.iter().enumerate() {
        let pool = Pool {
            kind: c.kind,
            kernel: [c.kernel; 2],
            strides: [c.stride; 2],
            pads: [c.pad; 4],
            ceil_mode: false,
            count_include_pad: c.count_include_pad,
        };
        let p = b.node(format!("pool{i}"), Op::Pool(pool), &[y]).unwrap();
        let out = b.unary(format!("neg{i}"), Unary::Neg, p).unwrap();
        b.output(out);
    }
    b.finish().unwrap()
}

/// The image `g` reads, seeded.
fn input(g: &Graph) -> ArrayD<f32> {
    let shape = &g.tensor(g.inputs[0]).shape;
    Values(9).array(shape, 1.0)
}

/// The largest error of `model`'s outputs against `reference`'s float64 outputs (the
/// same graph, or one changed to show that the check can fail), relative to each
/// output's largest magnitude.
fn error(reference: &Graph, model: &CompiledModel, dev: &mut dyn Device) -> f64 {
    let x = input(reference);
    let loaded = model.load(dev).unwrap();
    let got = loaded.run(dev, std::slice::from_ref(&x)).unwrap();
    loaded.free(dev);
    let want = evaluate(reference, &[x.mapv(f64::from)]).unwrap();
    got.iter()
        .zip(&want)
        .map(|(got, want)| normalized_error(got, want))
        .fold(0.0, f64::max)
}

/// f16 images rounded once where stored (the convolution's output, the pool's), f32
/// sums; f32's rounding of nine terms.
fn tolerance(precision: Precision) -> f64 {
    match precision {
        Precision::F16 => 1e-2,
        Precision::F32 | Precision::F32ChannelsLast => 1e-5,
    }
}

fn compile(g: &Graph, limits: &TargetLimits, precision: Precision) -> CompiledModel {
    let options = CompileOptions::default().with_precision(precision);
    CompiledModel::compile(g, limits, &options).unwrap_or_else(|e| panic!("{e}"))
}

/// How many groups of `model` report schedule `what`.
fn scheduled(model: &CompiledModel, what: &str) -> usize {
    model
        .groups
        .iter()
        .filter(|g| g.schedule.starts_with(what))
        .count()
}

/// Every case at `batch` and `channels` in `precision` on the interpreter under CUDA's
/// limits: right, and on the vector path where `vectored` says.
fn check(batch: usize, channels: usize, precision: Precision, vectored: bool) {
    let limits = TargetLimits::cuda();
    let cases = cases();
    let g = net(batch, channels, [17, 13], &cases);
    let model = compile(&g, &limits, precision);
    let text = model.show();
    let vec = match precision {
        Precision::F16 => VEC_F16,
        Precision::F32 | Precision::F32ChannelsLast => VEC_F32,
    };
    let (on, off) = if vectored {
        (cases.len(), 0)
    } else {
        (0, cases.len())
    };
    assert_eq!(scheduled(&model, vec), on, "{text}");
    assert_eq!(scheduled(&model, RULE), off, "{text}");
    let mut dev = CpuDevice::emulating(limits);
    let err = error(&g, &model, &mut dev);
    eprintln!("batch {batch}, {channels} channels, {precision:?}: error {err:.2e}");
    assert!(
        err <= tolerance(precision),
        "batch {batch}, {channels} channels, {precision:?}: error {err:.2e}\n{text}"
    );
}

#[test]
fn f16_pools_of_channels_in_eights_take_vectors_and_are_right() {
    for batch in [1, 3] {
        // One image keeps the rule (`MIN_IMAGES`).
        check(batch, 24, Precision::F16, batch >= 2);
    }
}

/// 20 and 7 channels are no multiple of 8 halves: the reduction rule, and right.
#[test]
fn f16_pools_of_other_channel_counts_keep_the_rule_and_are_right() {
    for batch in [1, 3] {
        for channels in [20, 7] {
            check(batch, channels, Precision::F16, false);
        }
    }
}

/// In f32 a vector is 4 floats: 24 and 20 channels take it, 7 keeps the rule.
#[test]
fn f32_pools_take_vectors_of_four_where_the_channels_allow_and_are_right() {
    for batch in [1, 3] {
        check(batch, 24, Precision::F32ChannelsLast, batch >= 2);
        check(batch, 20, Precision::F32ChannelsLast, batch >= 2);
        check(batch, 7, Precision::F32ChannelsLast, false);
    }
}

/// A pool reading a Concat's slice and writing into another's: the vector path where
/// the input's slice starts at a multiple of 8 channels (of a Concat of such), the
/// reduction rule where it starts 4 channels in; an output slice 4 channels in takes
/// the vector loads and stores element by element (the lowering proves no vector store
/// aligned there). Right every way, on the interpreter under CUDA's limits and on Vulkan
/// (lavapipe, where WGSL declares a buffer of whole `vec4`s only where every access is
/// one).
#[test]
fn pools_over_and_into_concat_slices_are_right() {
    let limits = TargetLimits::cuda();
    let mut dev = CpuDevice::emulating(limits.clone());
    sliced(&limits, &mut dev);
    if let Some(mut dev) = open_or_skip("vulkan") {
        let limits = dev.limits();
        sliced(&limits, dev.as_mut());
    }
}

/// [`pools_over_and_into_concat_slices_are_right`] compiled for `limits`, run on `dev`.
fn sliced(limits: &TargetLimits, dev: &mut dyn Device) {
    let case = Case {
        kind: PoolKind::Average,
        count_include_pad: true,
        kernel: 3,
        stride: 1,
        pad: 1,
    };
    for (before_in, before_out) in [(8, 8), (8, 4), (4, 8)] {
        let mut v = Values(83);
        let mut b = GraphBuilder::new("sliced");
        let x = b.input("x", &[3, IN_CHANNELS, 17, 13], DType::F32);
        let mut conv = |b: &mut GraphBuilder, name: &str, channels: usize| {
            let w = b.weight(
                format!("w_{name}"),
                v.array(&[channels, IN_CHANNELS, 1, 1], 0.4),
            );
            b.conv(name, x, w, None, Conv::new(1, 0)).unwrap()
        };
        let y = conv(&mut b, "y", 24);
        let z_in = conv(&mut b, "z_in", before_in);
        let z_out = conv(&mut b, "z_out", before_out);
        // `y` lies in `read`'s buffer, `before_in` channels in.
        let read = b.concat("read", &[z_in, y], 1).unwrap();
        let pool = Pool {
            kind: case.kind,
            kernel: [case.kernel; 2],
            strides: [case.stride; 2],
            pads: [case.pad; 4],
            ceil_mode: false,
            count_include_pad: case.count_include_pad,
        };
        let p = b.node("pool", Op::Pool(pool), &[y]).unwrap();
        // The pool writes into `written`'s buffer, `before_out` channels in.
        let written = b.concat("written", &[z_out, p], 1).unwrap();
        for (name, t) in [("neg_read", read), ("neg_written", written)] {
            let out = b.unary(name, Unary::Neg, t).unwrap();
            b.output(out);
        }
        let g = b.finish().unwrap();
        let model = compile(&g, limits, Precision::F16);
        let text = model.show();
        // Placed as meant: no Concat copies.
        for placed in [
            format!("nhwc into %read[axis 1 at {before_in}]"),
            format!("nhwc into %written[axis 1 at {before_out}]"),
        ] {
            assert!(text.contains(&placed), "{placed}\n{text}");
        }
        let vectored = before_in % 8 == 0;
        assert_eq!(scheduled(&model, VEC_F16), usize::from(vectored), "{text}");
        assert_eq!(scheduled(&model, RULE), usize::from(!vectored), "{text}");
        let err = error(&g, &model, dev);
        assert!(
            err <= tolerance(Precision::F16),
            "{}: {before_in}, {before_out}: error {err:.2e}\n{text}",
            limits.name
        );
    }
}

/// The check can fail: the model of an average pool counting its padding is far from
/// the reference of the same pool not counting it (a wrong divisor at the borders), and
/// a maximum from an average.
#[test]
fn a_wrong_divisor_or_kind_fails_the_check() {
    let limits = TargetLimits::cuda();
    for precision in [Precision::F16, Precision::F32ChannelsLast] {
        let pairs = [
            ((PoolKind::Average, true), (PoolKind::Average, false)),
            ((PoolKind::Max, false), (PoolKind::Average, false)),
        ];
        for (built, wrong) in pairs {
            let case = |(kind, count_include_pad): (PoolKind, bool)| Case {
                kind,
                count_include_pad,
                kernel: 3,
                stride: 1,
                pad: 1,
            };
            let g = net(3, 24, [17, 13], &[case(built)]);
            let model = compile(&g, &limits, precision);
            assert_eq!(scheduled(&model, RULE), 0, "{}", model.show());
            let mut dev = CpuDevice::emulating(limits.clone());
            assert!(error(&g, &model, &mut dev) <= tolerance(precision));
            let other = net(3, 24, [17, 13], &[case(wrong)]);
            let err = error(&other, &model, &mut dev);
            assert!(
                err > 10.0 * tolerance(precision),
                "{built:?} against {wrong:?}, {precision:?}: error {err:.2e}"
            );
        }
    }
}

/// The CUDA C of the vector path loads each tap as one `uint4` (f16) or `float4` (f32)
/// and compiles under NVRTC (skipped where NVRTC is absent).
#[test]
fn vector_kernels_load_sixteen_bytes_a_tap_and_compile_under_nvrtc() {
    let limits = TargetLimits::cuda();
    let opts = weft_codegen_cuda::CudaOptions {
        limits: limits.clone(),
    };
    for (precision, vector) in [
        (Precision::F16, "const uint4*"),
        (Precision::F32ChannelsLast, "const float4*"),
    ] {
        let g = net(3, 24, [17, 13], &cases());
        let model = compile(&g, &limits, precision);
        let pools: Vec<_> = model
            .groups
            .iter()
            .filter(|g| g.schedule.contains("channels a thread"))
            .collect();
        assert_eq!(pools.len(), cases().len(), "{}", model.show());
        for pool in pools {
            // A small kernel may run inside another group's (horizontal fusion).
            let group = match pool.horizontal {
                Horizontal::CarriedBy(i) => &model.groups[i],
                Horizontal::Alone | Horizontal::Carries(_) => pool,
            };
            let emitted = weft_codegen_cuda::emit_lowered(&group.kernels, &opts).unwrap();
            assert!(
                emitted.source.contains(vector),
                "{precision:?}: no {vector}\n{}",
                emitted.source
            );
            match weft_codegen_cuda::nvrtc::check(&emitted.source) {
                Ok(_) => {}
                Err(e) => panic!("{e}\n{}", emitted.source),
            }
        }
    }
}

/// Inception-v3's 3×3 average pool at batch 8 (`[8, 288, 35, 35]`, f16 NHWC, padding
/// counted as torchvision exports it) takes the vector path; its CUDA C is printed
/// (`--nocapture`).
#[test]
fn inceptions_average_pool_takes_vectors() {
    let limits = TargetLimits::cuda();
    let case = Case {
        kind: PoolKind::Average,
        count_include_pad: true,
        kernel: 3,
        stride: 1,
        pad: 1,
    };
    let g = net(8, 288, [35, 35], &[case]);
    let model = compile(&g, &limits, Precision::F16);
    let opts = weft_codegen_cuda::CudaOptions {
        limits: limits.clone(),
    };
    let pool = model
        .groups
        .iter()
        .find(|g| g.schedule.starts_with(VEC_F16))
        .unwrap_or_else(|| panic!("{}", model.show()));
    let emitted = weft_codegen_cuda::emit_lowered(&pool.kernels, &opts).unwrap();
    eprintln!("{}", emitted.source);
    assert!(
        emitted.source.contains("const uint4*"),
        "{}",
        emitted.source
    );
}

/// On Vulkan (lavapipe) the pools take the vector path too — WGSL's two `vec4<f16>` or
/// one `vec4<f32>` a tap — and the model is right; 20 channels in f16 keep the rule.
#[test]
fn vulkan_takes_vectors_and_is_right_on_wgpu() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        let limits = dev.limits();
        for (precision, channels, vec) in [
            (Precision::F16, 24, Some(VEC_F16)),
            (Precision::F16, 20, None),
            (Precision::F32ChannelsLast, 24, Some(VEC_F32)),
        ] {
            let g = net(3, channels, [17, 13], &cases());
            let model = compile(&g, &limits, precision);
            let text = model.show();
            let what = vec.unwrap_or(RULE);
            assert_eq!(scheduled(&model, what), cases().len(), "{text}");
            let err = error(&g, &model, dev.as_mut());
            eprintln!("vulkan {precision:?}, {channels} channels: error {err:.2e}");
            assert!(err <= tolerance(precision), "error {err:.2e}\n{text}");
        }
    }
}

/// The child process of [`the_knob_turns_the_vector_path_off`]: what it compiles under
/// the [`POOL_VEC_ENV`] it was given (`CHILD` names the expected outcome).
#[test]
fn knob_child() {
    let Ok(expect) = std::env::var(CHILD) else {
        return;
    };
    let g = net(2, 24, [17, 13], &cases()[..1]);
    let options = CompileOptions::default().with_precision(Precision::F16);
    let compiled = CompiledModel::compile(&g, &TargetLimits::cuda(), &options);
    match (expect.as_str(), compiled) {
        ("on", Ok(m)) => assert_eq!(scheduled(&m, VEC_F16), 1, "{}", m.show()),
        ("off", Ok(m)) => assert_eq!(scheduled(&m, RULE), 1, "{}", m.show()),
        ("refused", Err(e)) => {
            let e = format!("{e:#}");
            assert!(e.contains(POOL_VEC_ENV), "{e}");
        }
        (want, got) => panic!("{want}: {:?}", got.map(|m| m.show())),
    }
}

/// Names the outcome the child expects.
const CHILD: &str = "WEFT_TEST_POOL_VEC_CHILD";

/// [`POOL_VEC_ENV`]: unset or `1` the vector path, `0` the reduction rule, anything
/// else refused (each in a child process: the variable is the process's).
#[test]
fn the_knob_turns_the_vector_path_off() {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    for (value, expect) in [
        (None, "on"),
        (Some("1"), "on"),
        (Some("0"), "off"),
        (Some("2"), "refused"),
    ] {
        let mut cmd = Command::new(&exe);
        cmd.args(["knob_child", "--exact", "--nocapture"])
            .env(CHILD, expect);
        match value {
            Some(v) => cmd.env(POOL_VEC_ENV, v),
            None => cmd.env_remove(POOL_VEC_ENV),
        };
        let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
        assert!(
            out.status.success(),
            "{POOL_VEC_ENV}={value:?}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Metal and ROCm take the vector path too (every target does): each pool one 16-byte
/// load a tap as their writers emit it (`uint4` in MSL and HIP for eight halves), and
/// the model is right on the interpreter under their limits.
#[test]
fn metal_and_rocm_take_vectors_and_are_right() {
    for t in ["metal", "rocm"] {
        let target = weft_runtime::Target::parse(t).unwrap_or_else(|e| panic!("{e}"));
        let limits = target.limits();
        let g = net(3, 24, [17, 13], &cases());
        let model = compile(&g, &limits, Precision::F16);
        let text = model.show();
        assert_eq!(scheduled(&model, VEC_F16), cases().len(), "{t}\n{text}");
        let pool = model
            .groups
            .iter()
            .find(|g| g.schedule.starts_with(VEC_F16))
            .unwrap_or_else(|| panic!("{t}: no pool\n{text}"));
        let emitted = target
            .emit_function(&pool.kernels)
            .unwrap_or_else(|e| panic!("{t}: {e}"));
        assert!(emitted.source.contains("uint4"), "{t}:\n{}", emitted.source);
        let err = error(&g, &model, &mut CpuDevice::emulating(limits));
        eprintln!("{t}: error {err:.2e}");
        assert!(
            err <= tolerance(Precision::F16),
            "{t}: error {err:.2e}\n{text}"
        );
    }
}
