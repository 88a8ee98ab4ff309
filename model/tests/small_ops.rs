//! The graph ops exported models brought (issue 57: Mod, Pad, Tile), each in one-node
//! graphs through the whole model compiler on the interpreter and on wgpu (lavapipe in
//! CI), against the graph's float64 reference: exactly where the values are integers or
//! copies (a remainder, an index map), in f32 and with f16 storage. (The ONNX forms of
//! these and of the ops composed from others — CumSum, ReduceProd, TopK — are checked
//! against ONNX Runtime by `onnx/tests/ops.rs`.)

use ndarray::{ArrayD, IxDyn};
use weft_graph::op::{Binary, Op, Pad, PadMode, Tile};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;

const TARGETS: [&str; 2] = ["cpu", "vulkan"];

/// Runs `g` on `dev` and returns its first output and the reference's.
fn run(dev: &mut dyn Device, g: &Graph, inputs: &[ArrayD<f32>]) -> (ArrayD<f32>, ArrayD<f64>) {
    run_in(dev, g, inputs, Precision::F32)
}

/// [`run`] with tensors stored in `precision`.
fn run_in(
    dev: &mut dyn Device,
    g: &Graph,
    inputs: &[ArrayD<f32>],
    precision: Precision,
) -> (ArrayD<f32>, ArrayD<f64>) {
    let options = CompileOptions::default().with_precision(precision);
    let model = CompiledModel::compile(g, &dev.limits(), &options).unwrap();
    let exe = model.load(dev).unwrap();
    let got = exe.run(dev, inputs).unwrap();
    exe.free(dev);
    let x: Vec<ArrayD<f64>> = inputs.iter().map(|a| a.mapv(f64::from)).collect();
    let want = evaluate(g, &x).unwrap();
    (got[0].clone(), want[0].clone())
}

/// Mod of integers held in f32 is exact up to 2^24, with either sign rule, every sign
/// combination and divisors from 1 to 2^24 − 1, where a quotient rounded in f32 and a
/// product `q·b` past 2^24 would each be off by one.
#[test]
fn integer_remainders_are_exact() {
    let dividends: Vec<f32> = [
        0,
        1,
        7,
        -7,
        12,
        -12,
        16_777_215,
        -16_777_215,
        16_777_214,
        -16_777_213,
        5_592_405,
        -5_592_406,
        12_345_679,
        -9_999_991,
        8_388_609,
        -8_388_607,
    ]
    .iter()
    .map(|&v: &i32| v as f32)
    .collect();
    let divisors: Vec<f32> = [
        1,
        -1,
        2,
        3,
        -3,
        7,
        -10,
        4096,
        5_592_407,
        -5_592_407,
        16_777_214,
        -16_777_215,
        8_388_608,
    ]
    .iter()
    .map(|&v: &i32| v as f32)
    .collect();
    let (m, n) = (dividends.len(), divisors.len());
    let a = ArrayD::from_shape_vec(IxDyn(&[m, 1]), dividends).unwrap();
    let b = ArrayD::from_shape_vec(IxDyn(&[n]), divisors).unwrap();
    for target in TARGETS {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for fmod in [false, true] {
            let mut g = GraphBuilder::new("mod");
            let x = g.input("a", &[m, 1], DType::I32);
            let y = g.input("b", &[n], DType::I32);
            let r = g
                .node("mod", Op::Binary(Binary::Mod { fmod }), &[x, y])
                .unwrap();
            g.output(r);
            let g = g.finish().unwrap();
            let (got, want) = run(dev.as_mut(), &g, &[a.clone(), b.clone()]);
            for ((ix, &w), &v) in want.indexed_iter().zip(got.iter()) {
                assert_eq!(
                    f64::from(v),
                    w,
                    "{target}, fmod={fmod}: {} mod {} at {ix:?}",
                    a[[ix[0], 0]],
                    b[[ix[1]]]
                );
            }
        }
    }
}

/// C's fmod of floats: within f32 rounding of the float64 remainder, with NaN where
/// the divisor is 0 or the dividend infinite and the dividend where the divisor is.
#[test]
fn float_remainders_follow_fmod() {
    let a: Vec<f32> = vec![
        5.5,
        -5.5,
        0.3,
        -1e-3,
        1234.567,
        -98765.43,
        7.0,
        f32::INFINITY,
        2.5,
    ];
    let b: Vec<f32> = vec![1.5, 1.5, -0.1, 0.7, 3.3, -2.71, f32::INFINITY, 2.0, 0.0];
    let n = a.len();
    let a = ArrayD::from_shape_vec(IxDyn(&[n]), a).unwrap();
    let b = ArrayD::from_shape_vec(IxDyn(&[n]), b).unwrap();
    for target in TARGETS {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        let mut g = GraphBuilder::new("fmod");
        let x = g.input("a", &[n], DType::F32);
        let y = g.input("b", &[n], DType::F32);
        let r = g
            .node("mod", Op::Binary(Binary::Mod { fmod: true }), &[x, y])
            .unwrap();
        g.output(r);
        let g = g.finish().unwrap();
        let (got, want) = run(dev.as_mut(), &g, &[a.clone(), b.clone()]);
        for (k, (&v, &w)) in got.iter().zip(want.iter()).enumerate() {
            let v = f64::from(v);
            let close = (v.is_nan() && w.is_nan()) || (v - w).abs() <= 1e-6 * a[k].abs() as f64;
            assert!(close, "{target}: fmod({}, {}) = {v}, want {w}", a[k], b[k]);
        }
    }
}

/// Pad in every mode, cropping and padding one dimension and padding past the input's
/// length, and Tile: copies of input elements (values exact in f16), so the kernels
/// must match the reference exactly, in f32 and with f16 storage.
#[test]
fn pads_and_tiles_copy_exactly() {
    let dims = [3usize, 5, 4];
    let x = ArrayD::from_shape_fn(IxDyn(&dims), |ix| {
        (ix[0] * 20 + ix[1] * 4 + ix[2]) as f32 - 30.0
    });
    let mut ops: Vec<Op> = [
        PadMode::Constant,
        PadMode::Reflect,
        PadMode::Edge,
        PadMode::Wrap,
    ]
    .into_iter()
    .map(|mode| {
        Op::Pad(Pad {
            mode,
            begin: vec![0, -2, 5],
            end: vec![1, 3, -1],
            value: 7.0,
        })
    })
    .collect();
    ops.push(Op::Tile(Tile {
        repeats: vec![2, 1, 3],
    }));
    for target in TARGETS {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for op in &ops {
            for precision in [Precision::F32, Precision::F16] {
                let mut g = GraphBuilder::new("copy");
                let i = g.input("x", &dims, DType::F32);
                let y = g.node("y", op.clone(), &[i]).unwrap();
                g.output(y);
                let g = g.finish().unwrap();
                let (got, want) = run_in(dev.as_mut(), &g, std::slice::from_ref(&x), precision);
                assert_eq!(got.shape(), want.shape(), "{target}, {op}");
                for ((ix, &w), &v) in want.indexed_iter().zip(got.iter()) {
                    assert_eq!(f64::from(v), w, "{target}, {op}, {precision:?} at {ix:?}");
                }
            }
        }
    }
}
