//! Small graphs through the whole model compiler — passes, partition, lowering, plan,
//! one launch list — on the interpreter and on wgpu (lavapipe in CI), checked against
//! the graph's float64 reference on random inputs of odd sizes.

use ndarray::{ArrayD, IxDyn};
use weft_graph::op::{Binary, Conv, Gemm, Op, OpDef, Pool, PoolKind, Trilu, Unary};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder, TensorId};
use weft_ir::dtype::DType;
use weft_kernels::matmul;
use weft_model::tune::{AnchorChoice, Choices};
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;
use weft_testkit::random::Values;

fn weight(b: &mut GraphBuilder, v: &mut Values, name: &str, shape: &[usize]) -> TensorId {
    let fan_in: usize = shape[1..].iter().product::<usize>().max(1);
    let scale = (3.0 / fan_in as f32).sqrt();
    b.weight(name, v.array(shape, scale))
}

fn bn(b: &mut GraphBuilder, v: &mut Values, name: &str, x: TensorId, c: usize) -> TensorId {
    let gamma = b.weight(format!("{name}.g"), v.array(&[c], 0.5).mapv(|x| x + 1.0));
    let beta = b.weight(format!("{name}.b"), v.array(&[c], 0.2));
    let mean = b.weight(format!("{name}.m"), v.array(&[c], 0.2));
    let var = b.weight(format!("{name}.v"), v.array(&[c], 0.4).mapv(|x| x + 1.0));
    b.batch_norm(name, x, gamma, beta, mean, var, 1e-5).unwrap()
}

/// A residual block with a strided, asymmetrically padded convolution, a depthwise
/// convolution with ReLU6, a grouped dilated one (with bias and HardSwish), pools, a
/// concat and a classifier.
fn network() -> Graph {
    let mut v = Values(99);
    let mut b = GraphBuilder::new("small");
    let x = b.input("input", &[2, 3, 13, 11], DType::F32);
    let w = weight(&mut b, &mut v, "stem.w", &[8, 3, 3, 3]);
    let stem = Conv {
        strides: [2, 2],
        pads: [1, 0, 1, 1],
        dilations: [1, 1],
        groups: 1,
    };
    let y = b.conv("stem", x, w, None, stem).unwrap();
    let y = bn(&mut b, &mut v, "stem.bn", y, 8);
    let y = b.relu("stem.relu", y).unwrap();
    // Residual: conv-bn-relu-conv-bn + y, relu.
    let w1 = weight(&mut b, &mut v, "b1.w1", &[8, 8, 3, 3]);
    let r = b.conv("b1.conv1", y, w1, None, Conv::new(1, 1)).unwrap();
    let r = bn(&mut b, &mut v, "b1.bn1", r, 8);
    let r = b.relu("b1.relu1", r).unwrap();
    let w2 = weight(&mut b, &mut v, "b1.w2", &[8, 8, 1, 1]);
    let r = b.conv("b1.conv2", r, w2, None, Conv::new(1, 0)).unwrap();
    let r = bn(&mut b, &mut v, "b1.bn2", r, 8);
    let y = b.add("b1.add", r, y).unwrap();
    let y = b.relu("b1.relu", y).unwrap();
    // Depthwise 3x3 stride 2 with ReLU6 (the depthwise template).
    let wd = weight(&mut b, &mut v, "dw.w", &[8, 1, 3, 3]);
    let d = b
        .conv("dw", y, wd, None, Conv::new(2, 1).grouped(8))
        .unwrap();
    let d = bn(&mut b, &mut v, "dw.bn", d, 8);
    let d = b.clip("dw.relu6", d, 0.0, 6.0).unwrap();
    // A grouped, dilated convolution (two groups packed in one product) beside a max
    // pool, concatenated.
    let wg = weight(&mut b, &mut v, "g.w", &[6, 4, 3, 3]);
    let gconv = Conv {
        strides: [1, 1],
        pads: [2, 2, 2, 2],
        dilations: [2, 2],
        groups: 2,
    };
    let gb = weight(&mut b, &mut v, "g.b", &[6]);
    let a = b.conv("g", d, wg, Some(gb), gconv).unwrap();
    let a = b.unary("g.act", Unary::HardSwish, a).unwrap();
    let m = b
        .node(
            "pool",
            Op::Pool(Pool {
                kind: PoolKind::Average,
                kernel: [3, 3],
                strides: [1, 1],
                pads: [1, 1, 1, 1],
                ceil_mode: false,
                count_include_pad: false,
            }),
            &[d],
        )
        .unwrap();
    let cat = b.concat("cat", &[a, m], 1).unwrap();
    let mp = b
        .node(
            "maxpool",
            Op::Pool(Pool {
                kind: PoolKind::Max,
                kernel: [2, 2],
                strides: [2, 2],
                pads: [0, 0, 0, 0],
                ceil_mode: true,
                count_include_pad: false,
            }),
            &[cat],
        )
        .unwrap();
    let gp = b.global_pool("gap", PoolKind::Average, mp).unwrap();
    let f = b.flatten("flatten", gp, 1).unwrap();
    let wf = weight(&mut b, &mut v, "fc.w", &[5, 14]);
    let bf = b.weight("fc.b", v.array(&[5], 0.1));
    let logits = b.linear("fc", f, wf, bf).unwrap();
    let half = b.weight("half", ArrayD::from_elem(IxDyn(&[1]), 0.5));
    let logits = b.binary("scale", Binary::Mul, logits, half).unwrap();
    b.output(logits);
    // A second output: a MatMul of the pooled features.
    let wm = weight(&mut b, &mut v, "mm.w", &[14, 3]);
    let mm = b.node("mm", Op::MatMul, &[f, wm]).unwrap();
    let g2 = Gemm {
        alpha: 0.5,
        beta: 2.0,
        trans_a: false,
        trans_b: false,
    };
    let wg2 = weight(&mut b, &mut v, "gemm2.w", &[3, 4]);
    let cg2 = b.weight("gemm2.c", v.array(&[4], 1.0));
    let out2 = b.node("gemm2", Op::Gemm(g2), &[mm, wg2, cg2]).unwrap();
    b.output(out2);
    b.finish().unwrap()
}

/// Normalized error `max |weft − ref| / max(max |ref|, 1)` allowed in f32.
const F32_TOLERANCE: f64 = 1e-4;

/// Allowed in f16 storage with f32 accumulation: each stored activation is rounded to
/// 11 significant bits (a relative error up to 2⁻¹¹ ≈ 4.9e-4), and the network has
/// about ten roundings between input and output (the input, the filters, every stored
/// activation), each of which the next layers carry and sum; a few 1e-3 is what that
/// gives, and 1e-2 leaves room for unlucky inputs while still catching any wrong index
/// (an NHWC element read as NCHW is an error of order 1).
const F16_TOLERANCE: f64 = 1e-2;

/// Compiles the network in `precision`, runs it and returns the largest normalized
/// error of its outputs against the float64 reference.
fn error_on(dev: &mut dyn Device, precision: Precision) -> f64 {
    error_choosing(dev, precision, &Choices::none())
}

/// [`error_on`] with the anchors `choices` holds taking its choice.
fn error_choosing(dev: &mut dyn Device, precision: Precision, choices: &Choices) -> f64 {
    let g = network();
    let model = CompiledModel::compile(
        &g,
        &dev.limits(),
        &CompileOptions::default()
            .with_precision(precision)
            .with_choices(choices.clone()),
    )
    .unwrap();
    let text = model.show();
    // Batch norms folded, every convolution fused with its epilogue.
    assert!(!text.contains("BatchNormalization"), "{text}");
    assert!(
        text.contains("epilogue: b1.add:Add → b1.relu:Relu"),
        "{text}"
    );
    if precision == Precision::F32 {
        assert!(text.contains("depthwise template"), "{text}");
    } else {
        // NHWC: a 3×3 depthwise convolution over views by the direct rule (faster than
        // the template's shared tile at narrow windows, measured on the H200).
        assert!(text.contains("implicit-gemm (NHWC)"), "{text}");
        assert!(text.contains("rule: direct convolution"), "{text}");
    }
    if precision == Precision::F16 {
        assert!(text.contains("fp16 matmul template"), "{text}");
        // The stem reads the 3-channel f32 image through a padded f16 NHWC copy.
        assert!(text.contains("NHWC4 f16 copy"), "{text}");
    }
    // The grouped, dilated convolution: a batched implicit GEMM of its two groups.
    assert!(text.contains("grouped implicit-gemm"), "{text}");
    assert!(text.contains("no kernel: cat:Concat"), "{text}");
    let loaded = model.load(dev).unwrap();
    let mut v = Values(7);
    let x = v.array(&[2, 3, 13, 11], 1.0);
    let got = loaded.run(dev, std::slice::from_ref(&x)).unwrap();
    loaded.free(dev);
    let want = evaluate(&g, &[x.mapv(f64::from)]).unwrap();
    let mut worst = 0.0f64;
    for (got, want) in got.iter().zip(&want) {
        assert_eq!(got.shape(), want.shape());
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = got.iter().zip(want.iter()).fold(0.0f64, |m, (a, b)| {
            let d = (f64::from(*a) - b).abs();
            if d.is_nan() { f64::INFINITY } else { m.max(d) }
        });
        worst = worst.max(err / scale.max(1.0));
    }
    eprintln!(
        "small network in {precision:?} on {}: error {worst:.2e}",
        dev.name()
    );
    worst
}

/// `max |got − want|`, infinite where `got` holds a NaN.
fn largest_difference(got: &ArrayD<f32>, want: &ArrayD<f64>) -> f64 {
    got.iter()
        .zip(want.iter())
        .map(|(a, w)| (f64::from(*a) - w).abs())
        .fold(
            0.0f64,
            |m, d| if d.is_nan() { f64::INFINITY } else { m.max(d) },
        )
}

fn check_on(dev: &mut dyn Device) {
    for precision in [Precision::F32, Precision::F32ChannelsLast] {
        let err = error_on(dev, precision);
        assert!(err <= F32_TOLERANCE, "{precision:?}: error {err:.2e}");
    }
    if dev.limits().f16 {
        let err = error_on(dev, Precision::F16);
        assert!(err <= F16_TOLERANCE, "F16: error {err:.2e}");
    } else {
        eprintln!("{} has no f16: the f16 network is not run", dev.name());
    }
}

/// Every anchor that can run as Winograd F(2×2, 3×3) chosen so (as a tuning record
/// chooses it), in f32 NCHW and NHWC: the network still computes what its reference
/// does, with the Winograd kernels fused with their batch norm, bias and ReLU.
fn check_winograd_on(dev: &mut dyn Device) {
    let limits = dev.limits();
    for precision in [Precision::F32, Precision::F32ChannelsLast] {
        let plain = CompiledModel::compile(
            &network(),
            &limits,
            &CompileOptions::default().with_precision(precision),
        )
        .unwrap();
        let mut choices = Choices::none();
        for key in plain.groups.iter().filter_map(|g| g.anchor.as_ref()) {
            if key.winograd.is_some() {
                let choice = AnchorChoice {
                    config: matmul::default_config(&limits),
                    splits: 1,
                    winograd: true,
                };
                choices.insert(key, choice, "test".into());
            }
        }
        assert_eq!(
            choices.len(),
            1,
            "b1.conv1 is the one 3x3 stride-1 convolution"
        );
        let model = CompiledModel::compile(
            &network(),
            &limits,
            &CompileOptions::default()
                .with_precision(precision)
                .with_choices(choices.clone()),
        )
        .unwrap();
        let text = model.show();
        assert!(text.contains("Winograd F(2x2, 3x3)"), "{text}");
        let err = error_choosing(dev, precision, &choices);
        assert!(
            err <= F32_TOLERANCE,
            "Winograd {precision:?}: error {err:.2e}"
        );
    }
}

#[test]
fn winograd_anchors_run_on_the_interpreter() {
    if let Some(mut dev) = open_or_skip("cpu") {
        check_winograd_on(dev.as_mut());
    }
}

#[test]
fn winograd_anchors_run_on_wgpu() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        check_winograd_on(dev.as_mut());
    }
}

#[test]
fn winograd_anchors_run_on_cuda() {
    if let Some(mut dev) = open_or_skip("cuda") {
        check_winograd_on(dev.as_mut());
    }
}

#[test]
fn a_small_network_runs_on_the_interpreter() {
    if let Some(mut dev) = open_or_skip("cpu") {
        check_on(dev.as_mut());
    }
}

#[test]
fn a_small_network_runs_on_wgpu() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        check_on(dev.as_mut());
    }
}

#[test]
fn a_small_network_runs_on_cuda() {
    if let Some(mut dev) = open_or_skip("cuda") {
        check_on(dev.as_mut());
    }
}

/// Every elementwise function the graph has, compiled (as one injective kernel each,
/// behind a stored input) and run on the interpreter against its float64 definition, on
/// inputs inside its domain.
#[test]
fn every_elementwise_function_matches_its_definition() {
    let Some(mut dev) = open_or_skip("cpu") else {
        return;
    };
    let unaries = [
        Unary::Relu,
        Unary::Sigmoid,
        Unary::Tanh,
        Unary::Exp,
        Unary::Log,
        Unary::Sqrt,
        Unary::Abs,
        Unary::Neg,
        Unary::Reciprocal,
        Unary::Floor,
        Unary::Ceil,
        Unary::Erf,
        Unary::Sin,
        Unary::Cos,
        Unary::Softplus,
        Unary::HardSigmoid {
            alpha: 0.3,
            beta: 0.4,
        },
        Unary::HardSwish,
        Unary::LeakyRelu { alpha: 0.1 },
        Unary::Elu { alpha: 0.7 },
        Unary::Selu {
            alpha: 1.67,
            gamma: 1.05,
        },
        Unary::Celu { alpha: 0.8 },
        Unary::ThresholdedRelu { alpha: 0.2 },
        Unary::Softsign,
        Unary::Sign,
        Unary::Round,
        Unary::Tan,
        Unary::Asin,
        Unary::Acos,
        Unary::Atan,
        Unary::Sinh,
        Unary::Cosh,
        Unary::Asinh,
        Unary::Acosh,
        Unary::Atanh,
        Unary::Mish,
        Unary::Silu,
        Unary::Gelu { tanh: false },
        Unary::Gelu { tanh: true },
    ];
    let binaries = [
        Binary::Add,
        Binary::Sub,
        Binary::Mul,
        Binary::Div,
        Binary::Pow,
        Binary::Max,
        Binary::Min,
        Binary::PRelu,
    ];
    let mut v = Values(3);
    let n = 257;
    let mut cases: Vec<(String, Graph, Vec<ArrayD<f32>>)> = Vec::new();
    for u in unaries {
        // Inputs inside the function's domain, halves included for Round.
        let x = v.array(&[n], 1.0).mapv(|t| match u {
            Unary::Log | Unary::Sqrt | Unary::Reciprocal => t.abs() * 4.0 + 0.05,
            Unary::Acosh => t.abs() * 4.0 + 1.0,
            Unary::Asin | Unary::Acos | Unary::Atanh => t * 0.99,
            Unary::Round => (t * 8.0).round() / 2.0,
            Unary::Tan => t * 1.4,
            _ => t * 4.0,
        });
        let mut b = GraphBuilder::new("u");
        let input = b.input("x", &[n], DType::F32);
        let y = b.unary("f", u, input).unwrap();
        b.output(y);
        cases.push((u.name().to_string(), b.finish().unwrap(), vec![x]));
    }
    for f in binaries {
        let x = v.array(&[3, n], 2.0);
        let y = v
            .array(&[n], 2.0)
            .mapv(|t| if f == Binary::Pow { t.abs() + 0.1 } else { t });
        let x = if f == Binary::Pow {
            x.mapv(|t| t.abs() + 0.1)
        } else {
            x
        };
        let mut b = GraphBuilder::new("b");
        let a = b.input("a", &[3, n], DType::F32);
        let c = b.input("c", &[n], DType::F32);
        let out = b.binary("f", f, a, c).unwrap();
        b.output(out);
        cases.push((f.name().to_string(), b.finish().unwrap(), vec![x, y]));
    }
    for (upper, k) in [(true, 0), (true, 2), (false, -1), (false, 9)] {
        let x = v.array(&[2, 5, 7], 2.0);
        let mut b = GraphBuilder::new("t");
        let input = b.input("x", &[2, 5, 7], DType::F32);
        let y = b
            .node("f", Op::Trilu(Trilu { upper, k }), &[input])
            .unwrap();
        b.output(y);
        let name = format!("Trilu(upper={upper}, k={k})");
        cases.push((name, b.finish().unwrap(), vec![x]));
    }
    for (name, g, inputs) in cases {
        let model = CompiledModel::compile(&g, &dev.limits(), &CompileOptions::default()).unwrap();
        let loaded = model.load(dev.as_mut()).unwrap();
        let got = loaded.run(dev.as_mut(), &inputs).unwrap();
        loaded.free(dev.as_mut());
        let x: Vec<ArrayD<f64>> = inputs.iter().map(|a| a.mapv(f64::from)).collect();
        let want = evaluate(&g, &x).unwrap();
        for (a, b) in got[0].iter().zip(want[0].iter()) {
            let err = (f64::from(*a) - b).abs();
            // f32 functions: a few ulps of the value, or of 1 near zero.
            assert!(
                err <= 2e-5 * b.abs().max(1.0),
                "{name}: weft {a}, reference {b}"
            );
        }
    }
}

/// Scalars: a sum over every dimension that keeps none, then elementwise ops on the
/// scalar (what a loss or a norm exports); each a kernel of one thread.
#[test]
fn scalar_tensors_run() {
    use weft_graph::op::{Reduce, ReduceKind};
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        let mut b = GraphBuilder::new("scalar");
        let x = b.input("x", &[3, 5], DType::F32);
        let reduce = Reduce {
            kind: ReduceKind::Sum,
            axes: vec![0, 1],
            keep_dims: false,
        };
        let s = b.node("sum", Op::Reduce(reduce), &[x]).unwrap();
        let n = b.unary("neg", Unary::Neg, s).unwrap();
        let y = b.unary("exp", Unary::Exp, n).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        assert!(g.tensor(y).shape.is_empty());
        let input = Values(5).array(&[3, 5], 0.2);
        let model = CompiledModel::compile(&g, &dev.limits(), &CompileOptions::default()).unwrap();
        let exe = model.load(dev.as_mut()).unwrap();
        let got = exe.run(dev.as_mut(), std::slice::from_ref(&input)).unwrap();
        exe.free(dev.as_mut());
        let want = evaluate(&g, &[input.mapv(f64::from)]).unwrap();
        let (a, w) = (f64::from(got[0][IxDyn(&[])]), want[0][IxDyn(&[])]);
        assert!(
            (a - w).abs() <= 1e-5 * w.abs(),
            "{target}: weft {a}, reference {w}"
        );
    }
}

/// An RMS norm as exporters write it (`x / sqrt(mean(x²) + ε)`) on activations of a few
/// hundred, in f16: the mean of squares (≈ 10⁵, past f16's 65504) is a reduction's
/// result and stays f32 (`passes::precision`), so the norm is right instead of zero.
#[test]
fn an_rms_norm_of_large_activations_runs_in_f16() {
    use weft_graph::op::{Reduce, ReduceKind};
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        if !dev.limits().f16 {
            eprintln!("{} has no f16: skipped", dev.name());
            continue;
        }
        let mut b = GraphBuilder::new("rms");
        let x = b.input("x", &[4, 33], DType::F32);
        // Computed activations (the boundary stays f32): x · 600.
        let k = b.weight("k", ArrayD::from_elem(IxDyn(&[1]), 600.0));
        let h = b.node("scale", Op::Binary(Binary::Mul), &[x, k]).unwrap();
        let sq = b.node("sq", Op::Binary(Binary::Mul), &[h, h]).unwrap();
        let mean = Reduce {
            kind: ReduceKind::Mean,
            axes: vec![1],
            keep_dims: true,
        };
        let m = b.node("mean", Op::Reduce(mean), &[sq]).unwrap();
        let eps = b.weight("eps", ArrayD::from_elem(IxDyn(&[1]), 1e-6));
        let m = b.node("add", Op::Binary(Binary::Add), &[m, eps]).unwrap();
        let r = b.unary("sqrt", Unary::Sqrt, m).unwrap();
        let y = b.node("div", Op::Binary(Binary::Div), &[h, r]).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let opts = CompileOptions::default().with_precision(Precision::F16);
        let model = CompiledModel::compile(&g, &dev.limits(), &opts).unwrap();
        let exe = model.load(dev.as_mut()).unwrap();
        // Uniform in [-1, 1]: |h| up to 600, mean(h²) about 1.2·10⁵.
        let input = Values(11).array(&[4, 33], 1.0);
        let got = exe.run(dev.as_mut(), std::slice::from_ref(&input)).unwrap();
        exe.free(dev.as_mut());
        let want = evaluate(&g, &[input.mapv(f64::from)]).unwrap();
        let err = largest_difference(&got[0], &want[0]);
        assert!(err <= 1e-2, "{target}: error {err:.2e}");
    }
}

/// Weights wider than a buffer (issue 58, item 7): with the target's buffer limit forced
/// down to 4 KiB, an embedding table `[300, 24]` (28 KiB) and a tied output projection
/// `[24, 300]` are cut into column blocks (`passes::split_wide_weights`), every buffer
/// the model allocates fits, and the outputs are the unsplit graph's, in f32 and f16.
#[test]
fn weights_wider_than_a_buffer_run_in_column_blocks() {
    use weft_graph::op::Gather;
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        let mut b = GraphBuilder::new("tied");
        let ids = b.input("ids", &[2, 5], DType::I32);
        let mut v = Values(3);
        let table = v.array(&[300, 24], 1.0);
        let head = table.t().as_standard_layout().into_owned();
        let wte = b.weight("wte", table);
        let wt = b.weight("head", head);
        let e = b
            .node("embed", Op::Gather(Gather { axis: 0 }), &[wte, ids])
            .unwrap();
        let h = b.unary("tanh", Unary::Tanh, e).unwrap();
        let logits = b.node("logits", Op::MatMul, &[h, wt]).unwrap();
        b.output(logits);
        let g = b.finish().unwrap();
        let mut limits = dev.limits();
        limits.max_buffer_bytes = 4096;
        let id_values: Vec<f32> = [0, 299, 17, 150, 151, 3, 3, 298, 64, 1]
            .iter()
            .map(|&i| i as f32)
            .collect();
        let input = ArrayD::from_shape_vec(IxDyn(&[2, 5]), id_values).unwrap();
        let want = evaluate(&g, &[input.mapv(f64::from)]).unwrap();
        for (precision, tolerance) in [(Precision::F32, 1e-5), (Precision::F16, 1e-2)] {
            if precision == Precision::F16 && !dev.limits().f16 {
                continue;
            }
            let opts = CompileOptions::default().with_precision(precision);
            let model = CompiledModel::compile(&g, &limits, &opts).unwrap();
            let split = model
                .passes
                .iter()
                .find(|r| r.pass == "split weights wider than a buffer")
                .map(ToString::to_string);
            assert_eq!(
                split.as_deref(),
                Some("split weights wider than a buffer: 2 node(s)")
            );
            let exe = model.load(dev.as_mut()).unwrap();
            let got = exe.run(dev.as_mut(), std::slice::from_ref(&input)).unwrap();
            exe.free(dev.as_mut());
            let scale = want[0].iter().fold(0.0f64, |m, w| m.max(w.abs()));
            let err = largest_difference(&got[0], &want[0]);
            assert!(
                err <= tolerance * scale,
                "{target} {precision:?}: error {err:.2e} of {scale:.2e}"
            );
        }
    }
}

/// MobileViT's unfolding of patches after a convolution: a Reshape that merges the
/// channel axis with rows of the image (`[1, 4, 8, 8]` → `[16, 2, 4, 2]`), then a
/// Transpose. Post-scheduling fusion cannot write that reshape into the convolution's
/// stores; the compile keeps it out of the epilogue (`partition_keeping`) instead of
/// refusing the model, in f32 and f16.
#[test]
fn an_epilogue_fusion_cannot_write_becomes_a_kernel_of_its_own() {
    use weft_graph::op::{Reshape, Transpose};
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        let mut v = Values(5);
        let mut b = GraphBuilder::new("unfold");
        let x = b.input("x", &[1, 3, 8, 8], DType::F32);
        let w = b.weight("w", v.array(&[4, 3, 1, 1], 0.5));
        let y = b.conv("conv", x, w, None, Conv::new(1, 0)).unwrap();
        let reshape = Reshape {
            shape: vec![16, 2, 4, 2],
        };
        let r = b.node("unfold", Op::Reshape(reshape), &[y]).unwrap();
        let perm = Transpose {
            perm: vec![0, 2, 1, 3],
        };
        let t = b.node("patches", Op::Transpose(perm), &[r]).unwrap();
        let out = b.unary("act", Unary::Tanh, t).unwrap();
        b.output(out);
        let g = b.finish().unwrap();
        let input = v.array(&[1, 3, 8, 8], 1.0);
        let want = evaluate(&g, &[input.mapv(f64::from)]).unwrap();
        for (precision, tolerance) in [(Precision::F32, 1e-5), (Precision::F16, 1e-2)] {
            if precision == Precision::F16 && !dev.limits().f16 {
                continue;
            }
            let opts = CompileOptions::default().with_precision(precision);
            let model = CompiledModel::compile(&g, &dev.limits(), &opts).unwrap();
            let exe = model.load(dev.as_mut()).unwrap();
            let got = exe.run(dev.as_mut(), std::slice::from_ref(&input)).unwrap();
            exe.free(dev.as_mut());
            let err = largest_difference(&got[0], &want[0]);
            assert!(
                err <= tolerance,
                "{target} {precision:?}: error {err:.2e}\n{}",
                model.show()
            );
        }
    }
}
