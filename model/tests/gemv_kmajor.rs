//! `WEFT_GEMV_KMAJOR` (`CompileOptions::with_gemv_kmajor`): with it on, the weights that
//! only skinny products read are stored K-major (`[N, K]`) and those products run on the
//! K-major template (`weft_kernels::gemv::kmajor`), the bias, ReLU and residual fused
//! into its stores; without it, the same products read `[K, N]` on the row-major
//! template. Checked against the graph's float64 reference on the interpreter and on
//! wgpu (lavapipe in CI), in f32 and f16, at sizes whose rows are 16-byte aligned and at
//! odd ones (element loads).

use weft_graph::op::Op;
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::tensor::Layout;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::{CompileOptions, CompiledModel};
use weft_testkit::devices::open_or_skip;
use weft_testkit::random::Values;

/// `[batch, rows, hidden]` → `relu(x · W1 + b1) · W2 + b2 + x` → a linear head with a
/// transposed weight (a Gemm, `transB`) to 24 outputs.
fn mlp(batch: usize, rows: usize, hidden: usize, inner: usize) -> Graph {
    let mut v = Values(5 + rows as u64);
    let mut b = GraphBuilder::new("kmajor");
    let x = b.input("x", &[batch, rows, hidden], DType::F32);
    let w1 = b.weight("w1", v.array(&[hidden, inner], 0.3));
    let b1 = b.weight("b1", v.array(&[inner], 0.1));
    let w2 = b.weight("w2", v.array(&[inner, hidden], 0.15));
    let b2 = b.weight("b2", v.array(&[hidden], 0.1));
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
                shape: vec![batch * rows, hidden],
            }),
            &[y],
        )
        .unwrap();
    let w3 = b.weight("w3", v.array(&[24, hidden], 0.2));
    let b3 = b.weight("b3", v.array(&[24], 0.1));
    let out = b.linear("head", flat, w3, b3).unwrap();
    b.output(out);
    b.finish().unwrap()
}

fn layout(m: &CompiledModel, name: &str) -> Layout {
    m.graph
        .tensors
        .iter()
        .find(|t| t.name == name)
        .unwrap()
        .layout
}

/// Compiles and runs the MLP with the switch `on` on each target that opens, in f32 and
/// f16, against the float64 reference; returns the products on the K-major template and
/// on the row-major one in the last compile.
fn check(batch: usize, rows: usize, hidden: usize, inner: usize, on: bool) -> (usize, usize) {
    let g = mlp(batch, rows, hidden, inner);
    let input = Values(3).array(&[batch, rows, hidden], 1.0);
    let want = evaluate(&g, &[input.mapv(f64::from)]).unwrap();
    let scale = want[0].iter().fold(0f64, |m, v| m.max(v.abs()));
    let mut counts = (0, 0);
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for precision in [Precision::F32, Precision::F16] {
            if precision == Precision::F16 && !dev.limits().f16 {
                eprintln!("{} has no f16: skipped", dev.name());
                continue;
            }
            let opts = CompileOptions::default()
                .with_precision(precision)
                .with_gemv_kmajor(on);
            let model = CompiledModel::compile(&g, &dev.limits(), &opts).unwrap();
            let shown = model.show();
            counts = (
                shown.matches("gemv-kmajor template").count(),
                shown.matches("gemv template").count(),
            );
            if counts.0 == 3 {
                // MatMul weights `[K, N]` stored transposed, the transB head's `[N, K]`
                // as it is.
                assert_eq!(layout(&model, "w1"), Layout::Transposed, "{shown}");
                assert_eq!(layout(&model, "w2"), Layout::Transposed, "{shown}");
                assert_eq!(layout(&model, "w3"), Layout::RowMajor, "{shown}");
            } else {
                assert_eq!(layout(&model, "w1"), Layout::RowMajor, "{shown}");
                assert_eq!(layout(&model, "w3"), Layout::Transposed, "{shown}");
            }
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
            eprintln!(
                "{target} {precision:?} {batch}×{rows} {hidden}/{inner} on={on}: error {err:.2e}"
            );
            assert!(err <= tol, "{target} {precision:?}: {err}\n{shown}");
        }
    }
    counts
}

#[test]
fn skinny_products_take_the_k_major_template_with_the_switch_alone() {
    for (batch, rows, hidden, inner) in [
        (1, 1, 64, 136),
        (1, 1, 37, 133),
        (2, 4, 64, 136),
        (1, 8, 37, 133),
    ] {
        assert_eq!(
            check(batch, rows, hidden, inner, true),
            (3, 0),
            "{batch}×{rows}"
        );
        assert_eq!(
            check(batch, rows, hidden, inner, false),
            (0, 3),
            "{batch}×{rows}"
        );
    }
}

#[test]
fn nine_rows_keep_the_tiled_templates_and_k_n_with_the_switch() {
    assert_eq!(check(1, 9, 64, 136, true), (0, 0));
}
