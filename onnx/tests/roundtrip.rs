//! Export then import gives the same graph (ops, attributes, shapes, weights) and the
//! same reference outputs; ONNX Runtime runs the exported file to the same outputs.

mod common;

use ndarray::{ArrayD, IxDyn};
use rand::{Rng, SeedableRng, rngs::StdRng};
use weft_graph::op::{Binary, Conv, Gemm, Op, Pool, PoolKind, Reshape, Unary};
use weft_graph::{Graph, GraphBuilder, reference};
use weft_ir::dtype::DType;
use weft_onnx::{EXPORT_OPSET, ImportOptions, from_bytes, load, save, to_model};

fn random(rng: &mut StdRng, shape: &[usize]) -> ArrayD<f32> {
    ArrayD::from_shape_fn(IxDyn(shape), |_| rng.random_range(-1.0..1.0))
}

/// A graph using every op, with attribute values f32 holds exactly (ONNX's float
/// attributes are f32).
fn every_op() -> Graph {
    let mut rng = StdRng::seed_from_u64(17);
    let mut b = GraphBuilder::new("every_op");
    let x = b.input("x", &[2, 6, 11, 9], DType::F32);
    let w = b.weight("w", random(&mut rng, &[8, 3, 3, 3]));
    let bias = b.weight("bias", random(&mut rng, &[8]));
    let conv = Conv {
        strides: [2, 1],
        pads: [1, 0, 2, 1],
        dilations: [1, 2],
        groups: 2,
    };
    let y = b.conv("conv", x, w, Some(bias), conv).unwrap();
    let bn: Vec<_> = (0..4)
        .map(|i| {
            let mut v = random(&mut rng, &[8]);
            if i == 3 {
                v.mapv_inplace(|a| a.abs() + 0.5);
            }
            b.weight(format!("bn{i}"), v)
        })
        .collect();
    let y = b
        .batch_norm("bn", y, bn[0], bn[1], bn[2], bn[3], 0.0009765625)
        .unwrap();
    let y = b.relu("relu", y).unwrap();
    let y = b.clip("clip", y, 0.0, 6.0).unwrap();
    let pool = |kind, ceil_mode, count_include_pad| Pool {
        kind,
        kernel: [3, 2],
        strides: [2, 2],
        pads: [1, 0, 1, 1],
        ceil_mode,
        count_include_pad,
    };
    let p1 = b
        .node("maxpool", Op::Pool(pool(PoolKind::Max, true, false)), &[y])
        .unwrap();
    let p2 = b
        .node(
            "avgpool",
            Op::Pool(pool(PoolKind::Average, true, true)),
            &[y],
        )
        .unwrap();
    let y = b.concat("concat", &[p1, p2], 1).unwrap();
    let g1 = b.global_pool("gap", PoolKind::Average, y).unwrap();
    let g2 = b.global_pool("gmp", PoolKind::Max, y).unwrap();
    let y = b.binary("sub", Binary::Sub, g1, g2).unwrap();
    let y = b.flatten("flatten", y, 1).unwrap();
    let fc_w = b.weight("fc_w", random(&mut rng, &[10, 16]));
    let fc_b = b.weight("fc_b", random(&mut rng, &[10]));
    let y = b.linear("fc", y, fc_w, fc_b).unwrap();
    let gemm = Gemm {
        alpha: 0.5,
        beta: 2.0,
        trans_a: true,
        trans_b: false,
    };
    let m = b.weight("m", random(&mut rng, &[2, 5]));
    let c = b.weight("c", random(&mut rng, &[5]));
    let y2 = b.node("gemm", Op::Gemm(gemm), &[y, m, c]).unwrap();
    let y = b
        .node("reshape", Op::Reshape(Reshape { shape: vec![5, 4] }), &[y])
        .unwrap();
    let y = b.node("matmul", Op::MatMul, &[y2, y]).unwrap();
    let mut unaries = vec![
        Unary::LeakyRelu { alpha: 0.125 },
        Unary::HardSigmoid {
            alpha: 0.25,
            beta: 0.5,
        },
        Unary::Selu {
            alpha: 1.5,
            gamma: 1.25,
        },
        Unary::Elu { alpha: 0.75 },
        Unary::Celu { alpha: 0.5 },
        Unary::ThresholdedRelu { alpha: 0.25 },
        Unary::Gelu { tanh: true },
        Unary::Gelu { tanh: false },
        Unary::Mish,
        Unary::HardSwish,
        Unary::Softsign,
        Unary::Round,
        Unary::Sigmoid,
    ];
    let mut y = y;
    for (i, u) in unaries.drain(..).enumerate() {
        y = b.unary(format!("u{i}"), u, y).unwrap();
    }
    let slope = b.weight("slope", random(&mut rng, &[4]));
    let y = b.binary("prelu", Binary::PRelu, y, slope).unwrap();
    let y = b.binary("max", Binary::Max, y, slope).unwrap();
    let y = b.node("identity", Op::Identity, &[y]).unwrap();
    b.output(y);
    b.output(p1);
    b.finish().unwrap()
}

fn inputs(g: &Graph) -> Vec<ArrayD<f64>> {
    let mut rng = StdRng::seed_from_u64(3);
    g.inputs
        .iter()
        .map(|&i| random(&mut rng, &g.tensor(i).shape).mapv(f64::from))
        .collect()
}

#[test]
fn export_then_import_gives_the_same_graph() {
    let g = every_op();
    let model = to_model(&g).unwrap();
    // Gelu needs opset 20, which is what the model says.
    assert_eq!(model.opset_import[0].version, 20);
    let bytes = weft_onnx::to_bytes(&g).unwrap();
    let back = from_bytes(&bytes, &ImportOptions::default()).unwrap();
    assert_eq!(back.nodes.len(), g.nodes.len());
    for (a, b) in g.nodes.iter().zip(&back.nodes) {
        assert_eq!(a.op, b.op, "node {}", a.name);
        assert_eq!(a.name, b.name);
        assert_eq!(g.tensor(a.output).shape, back.tensor(b.output).shape);
    }
    assert_eq!(back.parameter_count(), g.parameter_count());
    let x = inputs(&g);
    let want = reference::evaluate(&g, &x).unwrap();
    let got = reference::evaluate(&back, &x).unwrap();
    assert_eq!(want, got, "the same weights and ops give the same values");
}

#[test]
fn silu_is_written_as_mul_of_sigmoid_and_comes_back_one_op() {
    let mut b = GraphBuilder::new("silu");
    let x = b.input("x", &[2, 7], DType::F32);
    let y = b.unary("act", Unary::Silu, x).unwrap();
    b.output(y);
    let g = b.finish().unwrap();
    let model = to_model(&g).unwrap();
    let ops: Vec<&str> = model
        .graph
        .as_ref()
        .unwrap()
        .node
        .iter()
        .map(|n| n.op_type.as_str())
        .collect();
    assert_eq!(ops, ["Sigmoid", "Mul"]);
    assert_eq!(model.opset_import[0].version, EXPORT_OPSET);
    let back = from_bytes(&weft_onnx::to_bytes(&g).unwrap(), &ImportOptions::default()).unwrap();
    let (back, _) = weft_graph::passes::optimize(&back).unwrap();
    let ops: Vec<Op> = back.nodes.iter().map(|n| n.op.clone()).collect();
    assert_eq!(ops, [Op::Unary(Unary::Silu)]);
    let x = inputs(&g);
    let want = reference::evaluate(&g, &x).unwrap();
    assert_eq!(want, reference::evaluate(&back, &x).unwrap());
    // ONNX Runtime computes what the reference does.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("silu.onnx");
    save(&g, &path).unwrap();
    let x32: Vec<ArrayD<f32>> = x.iter().map(|a| a.mapv(|v| v as f32)).collect();
    let Some(ort) = common::ort_run(&path, &x32) else {
        return;
    };
    let err = common::relative_error(&want[0], &ort[0]).unwrap();
    assert!(err < 1e-6, "relative error {err:e}");
}

#[test]
fn plain_graphs_are_written_at_opset_17() {
    let mut b = GraphBuilder::new("small");
    let x = b.input("x", &[1, 3], DType::F32);
    let y = b.relu("relu", x).unwrap();
    b.output(y);
    let model = to_model(&b.finish().unwrap()).unwrap();
    assert_eq!(model.opset_import[0].version, EXPORT_OPSET);
    assert_eq!(model.ir_version, 8);
}

#[test]
fn save_writes_the_file_whole() {
    let g = every_op();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("every_op.onnx");
    save(&g, &path).unwrap();
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["every_op.onnx"], "no temporary file is left");
    let back = load(&path, &ImportOptions::default()).unwrap();
    assert_eq!(back.nodes.len(), g.nodes.len());
    let err = save(&g, &dir.path().join("no/such/dir/m.onnx")).unwrap_err();
    assert!(err.to_string().contains("no/such/dir"), "{err}");
}

#[test]
fn onnx_runtime_runs_the_exported_model() {
    let g = every_op();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("every_op.onnx");
    save(&g, &path).unwrap();
    let x = inputs(&g);
    let x32: Vec<ArrayD<f32>> = x.iter().map(|a| a.mapv(|v| v as f32)).collect();
    let Some(ort) = common::ort_run(&path, &x32) else {
        return;
    };
    let want = reference::evaluate(&g, &x).unwrap();
    assert_eq!(ort.len(), want.len());
    for (k, (w, o)) in want.iter().zip(&ort).enumerate() {
        let err = common::relative_error(w, o).unwrap();
        assert!(err < 1e-5, "output {k}: relative error {err:e}");
    }
}
