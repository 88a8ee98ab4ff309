//! Products of few rows (a decode step's batch of 1 to 8) through the whole model
//! compiler take the skinny-product template (`weft_kernels::gemv`), with the bias, ReLU
//! and residual add fused into its stores and a `transB` head read through the weight
//! layout pass's stored copy; one row more takes the tiled templates again. Checked
//! against the graph's float64 reference on the interpreter and on wgpu (lavapipe in CI),
//! in f32 and f16, at odd sizes (37 features, an inner width of 133).

use weft_graph::op::Op;
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel};
use weft_testkit::devices::open_or_skip;
use weft_testkit::random::Values;

const HIDDEN: usize = 37;
const INNER: usize = 133;

/// `[batch, rows, 37]` → `relu(x · W1 + b1) · W2 + b2 + x` → a linear head with a
/// transposed weight (a Gemm, `transB`) to 24 outputs.
fn mlp(batch: usize, rows: usize) -> Graph {
    let mut v = Values(11 + rows as u64);
    let mut b = GraphBuilder::new("skinny");
    let x = b.input("x", &[batch, rows, HIDDEN], DType::F32);
    let w1 = b.weight("w1", v.array(&[HIDDEN, INNER], 0.3));
    let b1 = b.weight("b1", v.array(&[INNER], 0.1));
    let w2 = b.weight("w2", v.array(&[INNER, HIDDEN], 0.15));
    let b2 = b.weight("b2", v.array(&[HIDDEN], 0.1));
    let h = b.node("fc1.matmul", Op::MatMul, &[x, w1]).unwrap();
    let h = b.add("fc1", h, b1).unwrap();
    let h = b.relu("relu", h).unwrap();
    let y = b.node("fc2.matmul", Op::MatMul, &[h, w2]).unwrap();
    let y = b.add("fc2", y, b2).unwrap();
    let y = b.add("residual", y, x).unwrap();
    let flat = b
        .node(
            "rows",
            Op::Reshape(weft_graph::op::Reshape {
                shape: vec![batch * rows, HIDDEN],
            }),
            &[y],
        )
        .unwrap();
    let w3 = b.weight("w3", v.array(&[24, HIDDEN], 0.2));
    let b3 = b.weight("b3", v.array(&[24], 0.1));
    let out = b.linear("head", flat, w3, b3).unwrap();
    b.output(out);
    b.finish().unwrap()
}

/// Compiles and runs the MLP at `batch × rows` on each target that opens, in f32 and
/// f16, against the float64 reference; returns how many products took the gemv template
/// in the last compile.
fn check(batch: usize, rows: usize) -> usize {
    let g = mlp(batch, rows);
    let input = Values(7).array(&[batch, rows, HIDDEN], 1.0);
    let want = evaluate(&g, &[input.mapv(f64::from)]).unwrap();
    let scale = want[0].iter().fold(0f64, |m, v| m.max(v.abs()));
    let mut skinny = 0;
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for precision in [Precision::F32, Precision::F16] {
            if precision == Precision::F16 && !dev.limits().f16 {
                eprintln!("{} has no f16: skipped", dev.name());
                continue;
            }
            let opts = CompileOptions::default().with_precision(precision);
            let model = CompiledModel::compile(&g, &dev.limits(), &opts).unwrap();
            let shown = model.show();
            skinny = shown.matches("gemv template").count();
            let exe = model.load(dev.as_mut()).unwrap();
            let got = exe.run(dev.as_mut(), std::slice::from_ref(&input)).unwrap();
            exe.free(dev.as_mut());
            assert_eq!(got[0].shape(), want[0].shape());
            let err = got[0].iter().zip(want[0].iter()).fold(0f64, |m, (&a, &b)| {
                let d = (f64::from(a) - b).abs();
                if d.is_nan() { f64::INFINITY } else { m.max(d) }
            }) / scale;
            let tol = match precision {
                Precision::F32 => 1e-5,
                _ => 1e-2,
            };
            eprintln!("{target} {precision:?} {batch}×{rows}: error {err:.2e}");
            assert!(err <= tol, "{target} {precision:?}: {err}\n{shown}");
        }
    }
    skinny
}

#[test]
fn few_rows_take_the_skinny_template_and_are_right() {
    for (batch, rows) in [(1, 1), (3, 1), (1, 8), (2, 4)] {
        assert_eq!(check(batch, rows), 3, "{batch}×{rows}");
    }
}

#[test]
fn nine_rows_take_the_tiled_templates_again() {
    assert_eq!(check(1, 9), 0);
}
