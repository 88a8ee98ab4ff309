//! Symbolic dimensions (issue 60, item 1): an ONNX model whose inputs have a `sequence`
//! dim_param, imported with `sequence ∈ 1..24`, compiled once and run at several lengths
//! on the interpreter and lavapipe, in f32 and f16, against ONNX Runtime on the same file
//! at each length; the nodes weft cannot bound refused naming the node and the symbol.
//! The models are written by `symbolic_models.py` (onnx.helper, seeded weights).

mod common;

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};
use weft_graph::passes::Precision;
use weft_model::{CompileOptions, CompiledModel, ModelError};
use weft_onnx::{ImportOptions, load};
use weft_testkit::devices::open_or_skip;

const MAX: usize = 24;
/// The lengths each compiled model runs at: one token, odd ones, the maximum.
const LENGTHS: [usize; 4] = [1, 7, 17, MAX];
const VOCAB: usize = 50;

fn options(min: usize, max: usize) -> ImportOptions {
    ImportOptions {
        symbols: HashMap::from([("sequence".to_string(), min..=max)]),
        ..ImportOptions::default()
    }
}

/// The fixtures, written into a fresh folder; `None` where python3 or onnx is missing.
fn models() -> Option<tempfile::TempDir> {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    common::python("symbolic_models.py", &[dir.path()]);
    Some(dir)
}

/// Token ids and positions `0..n`, `[1, n]` each.
fn inputs(n: usize, seed: u64) -> Vec<ArrayD<f32>> {
    let mut s = seed;
    let ids = ArrayD::from_shape_fn(IxDyn(&[1, n]), |_| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) % VOCAB as u64) as f32
    });
    let positions = ArrayD::from_shape_fn(IxDyn(&[1, n]), |ix| ix[1] as f32);
    vec![ids, positions]
}

fn worst(got: &[ArrayD<f32>], want: &[ArrayD<f32>]) -> f64 {
    assert_eq!(got.len(), want.len(), "outputs");
    got.iter()
        .zip(want)
        .map(|(g, w)| common::relative_error(&g.mapv(f64::from), w).unwrap())
        .fold(0.0, f64::max)
}

#[test]
fn an_encoder_compiled_once_runs_at_every_length_like_onnx_runtime() {
    let Some(dir) = models() else {
        return;
    };
    let file = dir.path().join("encoder.onnx");
    let g = load(&file, &options(1, MAX)).unwrap();
    assert_eq!(g.symbols.len(), 1);
    assert!(
        g.to_string()
            .contains("symbol sequence \u{2208} 1..24, compiled at 24"),
        "{g}"
    );
    let want: Vec<Vec<ArrayD<f32>>> = LENGTHS
        .iter()
        .map(|&n| common::ort_run(&file, &inputs(n, n as u64)).unwrap())
        .collect();
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for (precision, tolerance) in [(Precision::F32, 1e-4), (Precision::F16, 5e-3)] {
            let opts = CompileOptions::default().with_precision(precision);
            // One compile and one load; then a run per length.
            let model = CompiledModel::compile(&g, &dev.limits(), &opts).unwrap();
            let exe = model.load(dev.as_mut()).unwrap();
            assert_eq!(exe.symbols().len(), 1);
            for (&n, want) in LENGTHS.iter().zip(&want) {
                let got = exe
                    .run_at(dev.as_mut(), &[("sequence", n)], &inputs(n, n as u64))
                    .unwrap();
                assert_eq!(got[0].shape(), &[1, n, 32]);
                let err = worst(&got, want);
                eprintln!("encoder at {n} on {target} ({precision:?}): {err:.2e}");
                assert!(err <= tolerance, "{target} {precision:?} at {n}: {err:.2e}");
            }
            // A length outside the range is refused, naming the symbol.
            let e = exe
                .run_at(dev.as_mut(), &[("sequence", MAX + 1)], &inputs(MAX + 1, 1))
                .unwrap_err();
            assert!(matches!(e, ModelError::Symbolic { .. }), "{e}");
            assert!(e.to_string().contains("`sequence`"), "{e}");
            exe.free(dev.as_mut());
        }
    }
}

/// The test above can fail: the same graph compiled with its symbol dropped (no masks)
/// and run on inputs padded to the maximum gives other answers at every length but the
/// maximum — the padding reaches the rows below n through the softmax, the product
/// over keys and the mean.
#[test]
fn without_the_masks_the_padding_changes_the_answer() {
    let Some(dir) = models() else {
        return;
    };
    let file = dir.path().join("encoder.onnx");
    let mut g = load(&file, &options(1, MAX)).unwrap();
    let (_, binding) = weft_graph::symbolic::bind(&g).unwrap();
    g.symbols.clear();
    let Some(mut dev) = open_or_skip("cpu") else {
        return;
    };
    let model = CompiledModel::compile(&g, &dev.limits(), &CompileOptions::default()).unwrap();
    let exe = model.load(dev.as_mut()).unwrap();
    let s = &binding.symbols[0];
    for n in [7, MAX] {
        let want = common::ort_run(&file, &inputs(n, n as u64)).unwrap();
        let padded: Vec<ArrayD<f32>> = inputs(n, n as u64)
            .iter()
            .zip(&s.inputs)
            .map(|(x, d)| weft_graph::symbolic::pad(x, d, n, MAX))
            .collect();
        let got: Vec<ArrayD<f32>> = exe
            .run(dev.as_mut(), &padded)
            .unwrap()
            .iter()
            .zip(&s.outputs)
            .map(|(y, d)| weft_graph::symbolic::cut(y, d, n, MAX))
            .collect();
        let err = worst(&got, &want);
        eprintln!("unmasked at {n}: {err:.2e}");
        if n == MAX {
            assert!(err <= 1e-4, "at the maximum nothing is padded: {err:.2e}");
        } else {
            assert!(err > 1e-2, "the padding went unseen at {n}: {err:.2e}");
        }
    }
    exe.free(dev.as_mut());
}

#[test]
fn what_weft_cannot_bound_is_refused_naming_the_node_and_the_symbol() {
    let Some(dir) = models() else {
        return;
    };
    // A layer norm over the sequence: refused by the compile.
    let g = load(
        &dir.path().join("norm_over_sequence.onnx"),
        &options(1, MAX),
    )
    .unwrap();
    let limits = weft_runtime::Target::parse("cpu").unwrap().limits();
    let e = CompiledModel::compile(&g, &limits, &CompileOptions::default()).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("norm_over_sequence"), "{text}");
    assert!(text.contains("`sequence`"), "{text}");
    // The same file at one fixed length compiles: it is the symbol that is refused.
    let fixed = ImportOptions {
        bindings: HashMap::from([("sequence".to_string(), 5)]),
        ..ImportOptions::default()
    };
    let g = load(&dir.path().join("norm_over_sequence.onnx"), &fixed).unwrap();
    CompiledModel::compile(&g, &limits, &CompileOptions::default()).unwrap();
    // A length read with Shape: refused at import, naming the Shape node.
    let e = load(&dir.path().join("shape_of_sequence.onnx"), &options(1, MAX)).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("length_of_sequence"), "{text}");
    assert!(text.contains("`sequence`"), "{text}");
    // A constant as long as the maximum along the sequence: refused at import.
    let e = load(
        &dir.path().join("table_of_maximum_length.onnx"),
        &options(1, MAX),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("add_table"), "{text}");
    assert!(text.contains("`sequence`"), "{text}");
}
