//! An RMS norm folded into the skinny product that reads it (`weft_graph::partition::
//! row_norm`, `weft_kernels::gemv::template_normed`), through the whole model compiler:
//! `RMSNorm(x) · W + b` at 1, 2, 3 and 8 rows is one kernel, right against the graph's
//! float64 reference (epsilon from the graph, 133 features, 37 outputs) on the
//! interpreter and on wgpu (lavapipe in CI), f32 and f16; nine rows, a norm with a second
//! reader, and the fold left out (`norm-fold`) keep the norm a kernel of its own.

use ndarray::ArrayD;
use weft_graph::op::{LayerNorm, Op};
use weft_graph::passes::Precision;
use weft_graph::reference::evaluate;
use weft_graph::{Graph, GraphBuilder};
use weft_ir::dtype::DType;
use weft_model::compiled::NORM_FOLD;
use weft_model::{CompileOptions, CompiledModel};
use weft_testkit::devices::open_or_skip;
use weft_testkit::random::Values;

const K: usize = 133;
const N: usize = 37;
/// Large enough that dropping it shows.
const EPSILON: f64 = 0.3;

/// `[rows, 133]` → RMS norm (γ) → `· W + b`; with `twice`, the norm's output is a graph
/// output too (a second reader).
fn normed_product(rows: usize, twice: bool) -> Graph {
    let mut v = Values(5 + rows as u64);
    let mut b = GraphBuilder::new("normed");
    let x = b.input("x", &[1, rows, K], DType::F32);
    let gamma = v.array(&[K], 0.5).mapv(|g| 1.0 + g);
    let gamma = b.weight("gamma", gamma);
    let w = b.weight("w", v.array(&[K, N], 0.2));
    let bias = b.weight("bias", v.array(&[N], 0.1));
    let norm = Op::LayerNorm(LayerNorm {
        axis: 2,
        epsilon: EPSILON,
        rms: true,
    });
    let y = b.node("norm", norm, &[x, gamma]).unwrap();
    let p = b.node("proj", Op::MatMul, &[y, w]).unwrap();
    let out = b.add("proj.bias", p, bias).unwrap();
    b.output(out);
    if twice {
        b.output(y);
    }
    b.finish().unwrap()
}

/// Rows of different scales, so that each has its own factor.
fn input(rows: usize) -> ArrayD<f32> {
    let mut x = Values(9).array(&[1, rows, K], 1.0);
    x.indexed_iter_mut()
        .for_each(|(ix, v)| *v *= 1.0 + ix[1] as f32);
    x
}

/// Compiles and runs `g` on each target that opens, in f32 and f16, against the float64
/// reference; returns the last compile's partition as shown.
fn check(g: &Graph, rows: usize, disabled: &[String]) -> String {
    let x = input(rows);
    let want = evaluate(g, &[x.mapv(f64::from)]).unwrap();
    let scale = want[0].iter().fold(0f64, |m, v| m.max(v.abs()));
    let mut shown = String::new();
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
                .with_disabled(disabled);
            let model = CompiledModel::compile(g, &dev.limits(), &opts).unwrap();
            shown = model.show();
            let exe = model.load(dev.as_mut()).unwrap();
            let got = exe.run(dev.as_mut(), std::slice::from_ref(&x)).unwrap();
            exe.free(dev.as_mut());
            assert_eq!(got.len(), want.len());
            let err = got.iter().zip(&want).fold(0f64, |m, (got, want)| {
                got.iter().zip(want.iter()).fold(m, |m, (&a, &b)| {
                    let d = (f64::from(a) - b).abs();
                    if d.is_nan() { f64::INFINITY } else { m.max(d) }
                })
            }) / scale;
            let tol = match precision {
                Precision::F32 => 1e-5,
                _ => 1e-2,
            };
            eprintln!("{target} {precision:?} {rows} row(s): error {err:.2e}");
            assert!(err <= tol, "{target} {precision:?}: {err}\n{shown}");
        }
    }
    shown
}

#[test]
fn a_norm_before_a_few_rows_product_is_folded_and_right() {
    for rows in [1, 2, 3, 8] {
        let shown = check(&normed_product(rows, false), rows, &[]);
        assert!(
            shown.contains("row norm: norm:RMSNormalization")
                && shown.contains("RMS norm norm folded in (ε = 3e-1")
                && shown.contains("in the product's kernel"),
            "{rows} rows:\n{shown}"
        );
        assert!(!shown.contains("[reduction]"), "{shown}");
    }
}

#[test]
fn the_norm_stays_a_kernel_where_the_fold_does_not_apply() {
    let shown = check(&normed_product(9, false), 9, &[]);
    assert!(
        shown.contains("[reduction] norm:RMSNormalization")
            && shown.contains("a kernel of its own — 9 rows > 8"),
        "{shown}"
    );
    // A graph output too: the norm's output is stored (and checked: `check` compares
    // every output).
    let shown = check(&normed_product(2, true), 2, &[]);
    assert!(
        shown.contains("[reduction] norm:RMSNormalization")
            && shown.contains("a kernel of its own — its output is a graph output too")
            && !shown.contains("row norm"),
        "{shown}"
    );
    let shown = check(&normed_product(2, false), 2, &[NORM_FOLD.to_string()]);
    assert!(
        shown.contains("[reduction] norm:RMSNormalization") && !shown.contains("row norm"),
        "{shown}"
    );
}
