//! Very long rows through the whole model compiler: softmax, layer and RMS norm and row
//! reductions over rows of 20011 take the row-reduction template's split form (two
//! kernels, a chunk of a row per block) by its rule, with a prologue inlined into both
//! kernels and an epilogue (the layer norm's scale and bias) fused into the stores;
//! checked against the graph's float64
//! reference on the interpreter, wgpu and CUDA where present.

use ndarray::{ArrayD, IxDyn};
use weft_graph::op::{Binary, LayerNorm, Op, Reduce, ReduceKind, Softmax};
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel};
use weft_runtime::Device;
use weft_testkit::devices::open_or_skip;

const ROWS: usize = 2;
const N: usize = 20011;

/// A deterministic array of values in [-scale, scale), then `+ shift`.
fn array(seed: u64, shape: &[usize], scale: f32, shift: f32) -> ArrayD<f32> {
    let mut s = seed;
    ArrayD::from_shape_fn(IxDyn(shape), |_| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale + shift
    })
}

/// `x [2, 20011]` into: softmax · 3; the layer norm of `x + 1000` (a large mean against
/// the spread) with scale and bias; the RMS norm of `x` with scale; the mean and the max
/// of each row.
fn graph() -> Graph {
    let mut b = GraphBuilder::new("long_rows");
    let x = b.input("x", &[ROWS, N], DType::F32);
    let s = b
        .node("softmax", Op::Softmax(Softmax { axis: 1 }), &[x])
        .unwrap();
    let three = b.weight("three", array(1, &[1], 0.0, 3.0));
    let s3 = b.binary("scaled", Binary::Mul, s, three).unwrap();
    b.output(s3);
    let thousand = b.weight("thousand", array(2, &[1], 0.0, 1000.0));
    let shifted = b.add("shifted", x, thousand).unwrap();
    let gamma = b.weight("gamma", array(3, &[N], 0.5, 1.0));
    let beta = b.weight("beta", array(4, &[N], 0.2, 0.0));
    let ln = Op::LayerNorm(LayerNorm {
        axis: 1,
        epsilon: 1e-5,
        rms: false,
    });
    let norm = b.node("norm", ln, &[shifted, gamma, beta]).unwrap();
    b.output(norm);
    let rms = Op::LayerNorm(LayerNorm {
        axis: 1,
        epsilon: 1e-6,
        rms: true,
    });
    let rms = b.node("rms", rms, &[x, gamma]).unwrap();
    b.output(rms);
    for (name, kind) in [("mean", ReduceKind::Mean), ("max", ReduceKind::Max)] {
        let op = Op::Reduce(Reduce {
            kind,
            axes: vec![1],
            keep_dims: false,
        });
        let r = b.node(name, op, &[x]).unwrap();
        b.output(r);
    }
    b.finish().unwrap()
}

fn check_on(dev: &mut dyn Device) {
    let g = graph();
    let model = CompiledModel::compile(&g, &dev.limits(), &CompileOptions::default()).unwrap();
    let text = model.show();
    // Each of the five row groups split (2 rows of 20011: 4 parts of 5003 where a
    // block per row would be 2 blocks), none through the fallback rules (taken where
    // the template's epilogue cannot fuse).
    assert_eq!(
        text.matches("split in 4 parts (two kernels) for 2 rows of 20011")
            .count(),
        5,
        "{text}"
    );
    assert!(!text.contains("the template's epilogue"), "{text}");
    let loaded = model.load(dev).unwrap();
    let x = array(7, &[ROWS, N], 1.0, 0.0);
    let got = loaded.run(dev, std::slice::from_ref(&x)).unwrap();
    loaded.free(dev);
    let want = evaluate(&g, &[x.mapv(f64::from)]).unwrap();
    assert_eq!(got.len(), 5);
    for (i, (got, want)) in got.iter().zip(&want).enumerate() {
        assert_eq!(got.shape(), want.shape());
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-30);
        for (a, b) in got.iter().zip(want.iter()) {
            let err = (f64::from(*a) - b).abs() / scale;
            assert!(err <= 1e-4, "output {i}: {a} against {b} on {}", dev.name());
        }
    }
}

#[test]
fn long_rows_split_on_the_interpreter() {
    if let Some(mut dev) = open_or_skip("cpu") {
        check_on(dev.as_mut());
    }
}

#[test]
fn long_rows_split_on_wgpu() {
    if let Some(mut dev) = open_or_skip("vulkan") {
        check_on(dev.as_mut());
    }
}

#[test]
fn long_rows_split_on_cuda() {
    if let Some(mut dev) = open_or_skip("cuda") {
        check_on(dev.as_mut());
    }
}
