//! Sizes read from a symbolic dimension at import (issue 60, item 1): exporters compute
//! position ids, causal masks and reshape targets from `Shape` of the input. Imported with
//! `sequence ∈ 1..MAX`, such files compile once and run at every length like ONNX Runtime
//! on the same file — PyTorch's own GPT-2 and Llama exports (both exporters: the corpus
//! fixtures with their dim_params kept) and `symbolic_models.py`'s layer — on the
//! interpreter in f32 and on lavapipe in f16; a size used any other way is refused at
//! import, naming the Shape node it was read by.

mod common;

use std::collections::HashMap;
use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use weft_graph::passes::Precision;
use weft_model::{CompileOptions, CompiledModel};
use weft_onnx::{ImportOptions, load};
use weft_testkit::devices::open_or_skip;

const MAX: usize = 24;
/// One token, an odd length, the maximum.
const LENGTHS: [usize; 3] = [1, 7, MAX];

fn options(symbol: &str) -> ImportOptions {
    ImportOptions {
        symbols: HashMap::from([(symbol.to_string(), 1..=MAX)]),
        ..ImportOptions::default()
    }
}

/// Token ids `[1, n]` below `vocab`, seeded by `n`.
fn ids(n: usize, vocab: u64) -> Vec<ArrayD<f32>> {
    let mut s = n as u64 + 17;
    vec![ArrayD::from_shape_fn(IxDyn(&[1, n]), |_| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) % vocab) as f32
    })]
}

/// Compiles `file` once per target and precision and runs it at every length against
/// ONNX Runtime on the same file.
fn runs_like_onnx_runtime(file: &Path, symbol: &str, vocab: u64, label: &str) {
    let g = load(file, &options(symbol)).unwrap();
    assert_eq!(g.symbols.len(), 1, "{label}");
    let want: Vec<Vec<ArrayD<f32>>> = LENGTHS
        .iter()
        .map(|&n| common::ort_run(file, &ids(n, vocab)).unwrap())
        .collect();
    for (target, precision, tolerance) in [
        ("cpu", Precision::F32, 1e-4),
        ("vulkan", Precision::F16, 1e-2),
    ] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        let opts = CompileOptions::default().with_precision(precision);
        let model = CompiledModel::compile(&g, &dev.limits(), &opts).unwrap();
        let exe = model.load(dev.as_mut()).unwrap();
        for (&n, want) in LENGTHS.iter().zip(&want) {
            let got = exe
                .run_at(dev.as_mut(), &[(symbol, n)], &ids(n, vocab))
                .unwrap();
            assert_eq!(got.len(), want.len());
            for (y, w) in got.iter().zip(want) {
                assert_eq!(y.shape()[1], n);
                let err = common::relative_error(&y.mapv(f64::from), w).unwrap();
                eprintln!("{label} at {n} on {target} ({precision:?}): {err:.2e}");
                assert!(
                    err <= tolerance,
                    "{label} {target} {precision:?} at {n}: {err:.2e}"
                );
            }
        }
        exe.free(dev.as_mut());
    }
}

#[test]
fn pytorchs_gpt2_and_llama_exports_from_both_exporters_run_at_every_length() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    // Each exporter names the dimension its own way.
    for (fixture, symbol) in [
        ("gpt2_torchscript", "sequence"),
        ("llama_torchscript", "sequence"),
        ("gpt2_dynamo", "s46"),
        ("llama_dynamo", "s46"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let src = common::tests_dir().join(format!("fixtures/corpus/{fixture}.onnx"));
        common::python("corpus_fill.py", &[&src, dir.path()]);
        // The fixtures' token ids are below 1000 (`weft.fixture` metadata).
        runs_like_onnx_runtime(&dir.path().join("symbolic.onnx"), symbol, 1000, fixture);
    }
}

#[test]
fn positions_masks_and_shapes_from_shape_and_what_is_refused() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::python("symbolic_models.py", &[dir.path()]);
    runs_like_onnx_runtime(
        &dir.path().join("positions_from_shape.onnx"),
        "sequence",
        50,
        "positions_from_shape",
    );
    // A size computed from the length (n + 1, n − 1) reaches data or a bound: refused,
    // naming the Shape node and the symbol.
    // So is a constant of positions held to one length (plus a table of 24 entries), or
    // fewer positions than tokens (`Range(2, n)`).
    for (model, reaches) in [
        ("range_past_length", "`pe` as data"),
        ("shape_of_sequence", "as data"),
        ("slice_short_of_length", "input 2 of `short_slice` (Slice)"),
        ("positions_plus_table", "`s3` as data"),
        ("positions_from_two", "`pe` as data"),
    ] {
        let e = load(
            &dir.path().join(format!("{model}.onnx")),
            &options("sequence"),
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("length_of_sequence"), "{model}: {text}");
        assert!(text.contains("`sequence`"), "{model}: {text}");
        assert!(text.contains(reaches), "{model}: {text}");
    }
    // Each of them imports at one fixed length: it is the symbol that is refused.
    for model in [
        "range_past_length",
        "shape_of_sequence",
        "slice_short_of_length",
    ] {
        let fixed = ImportOptions {
            bindings: HashMap::from([("sequence".to_string(), 5)]),
            ..ImportOptions::default()
        };
        load(&dir.path().join(format!("{model}.onnx")), &fixed).unwrap();
    }
}
