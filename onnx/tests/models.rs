//! Whole models against ONNX Runtime: each zoo network exported to ONNX by weft, run by
//! ONNX Runtime (CPU) on that file, imported back from the file, compiled by weft's model
//! compiler and run on lavapipe (wgpu) — the two engines' outputs compared on the same
//! file and inputs.

mod common;

use ndarray::{ArrayD, IxDyn};
use weft_graph::passes::Precision;
use weft_graph::zoo::{self, ZooOptions};
use weft_model::{CompileOptions, CompiledModel};
use weft_onnx::{ImportOptions, load, save};
use weft_testkit::devices::open_or_skip;

/// `max |weft − ORT| / max(1, max |ORT|)` allowed: both f32, different summation orders.
const TOLERANCE: f64 = 1e-4;

#[test]
fn zoo_models_match_onnx_runtime() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let Some(mut dev) = open_or_skip("vulkan") else {
        return;
    };
    for (name, resolution) in [("mobilenet_v2", 32), ("resnet50", 32), ("inception_v3", 75)] {
        let mut opts = ZooOptions::for_model(name).unwrap();
        opts.resolution = resolution;
        let g = zoo::build(name, &opts).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("{name}.onnx"));
        save(&g, &file).unwrap();
        let mut seed = 11u64;
        let x = ArrayD::from_shape_fn(IxDyn(&g.tensor(g.inputs[0]).shape), |_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        });
        let Some(ort) = common::ort_run(&file, std::slice::from_ref(&x)) else {
            return;
        };
        // What weft runs is the file, not the graph it was written from.
        let imported = load(&file, &ImportOptions::default()).unwrap();
        let model =
            CompiledModel::compile(&imported, &dev.limits(), &CompileOptions::default()).unwrap();
        let loaded = model.load(dev.as_mut()).unwrap();
        let got = loaded.run(dev.as_mut(), std::slice::from_ref(&x)).unwrap();
        loaded.free(dev.as_mut());
        let err = common::relative_error(&got[0].mapv(f64::from), &ort[0]).unwrap();
        eprintln!("{name} at {resolution}²: weft (lavapipe) vs ONNX Runtime {err:.2e}");
        assert!(err <= TOLERANCE, "{name}: {err:.2e} above {TOLERANCE:e}");
    }
}

/// Tiny BERT and GPT-2 (the Hugging Face architectures, random weights) exported by
/// PyTorch 2.11's two ONNX exporters (`fixtures/export_transformers.py`; the TorchScript
/// exporter fails on GPT-2's `aten::diff`): imported by weft, compiled and run on the
/// interpreter and on lavapipe, against ONNX Runtime on the same file and inputs (token
/// ids and a 0/1 attention mask drawn by `weft_graph::inputs`).
#[test]
fn transformers_exported_by_pytorch_match_onnx_runtime() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for name in ["bert_tiny_dynamo", "bert_tiny_legacy", "gpt2_tiny_dynamo"] {
            let file = fixtures.join(format!("{name}.onnx"));
            let g = load(&file, &ImportOptions::default()).unwrap();
            // Every layer norm is one node, the TorchScript exporter's decomposed ones too.
            let (optimized, _) = weft_graph::passes::optimize(&g).unwrap();
            let counts = optimized.op_counts();
            let count = |op: &str| counts.iter().find(|(n, _)| *n == op).map_or(0, |c| c.1);
            // BERT: embeddings and two per layer; GPT-2: two per layer and the last.
            assert_eq!(count("LayerNormalization"), 5, "{name}: {counts:?}");
            assert_eq!(count("ReduceMean"), 0, "{name}: {counts:?}");
            // Each layer's attention is one node (the dynamo exporter's NaN guard and
            // BERT's padding mask inside it), no Softmax left.
            assert_eq!(count("Attention"), 2, "{name}: {counts:?}");
            assert_eq!(count("Softmax"), 0, "{name}: {counts:?}");
            let inputs = weft_graph::inputs::random_inputs(&g, 7);
            let Some(ort) = common::ort_run(&file, &inputs) else {
                return;
            };
            let model =
                CompiledModel::compile(&g, &dev.limits(), &CompileOptions::default()).unwrap();
            let loaded = model.load(dev.as_mut()).unwrap();
            let got = loaded.run(dev.as_mut(), &inputs).unwrap();
            loaded.free(dev.as_mut());
            assert_eq!(got.len(), ort.len(), "{name}: outputs");
            for (k, (w, o)) in got.iter().zip(&ort).enumerate() {
                let err = common::relative_error(&w.mapv(f64::from), o).unwrap();
                eprintln!("{name} output {k} on {target}: weft vs ONNX Runtime {err:.2e}");
                assert!(err <= TOLERANCE, "{name} output {k} on {target}: {err:.2e}");
            }
        }
    }
}

/// A segmentation head and a video block (`fixtures/export_vision.py`: F.interpolate
/// nearest, bilinear with and without align_corners, bicubic; ConvTranspose 1-D, 2-D,
/// 3-D; Conv3d with groups; 3-D max and average pools, ceil_mode) as PyTorch's
/// TorchScript exporter writes them (Resize sizes through Shape, Slice and Concat):
/// compiled in f32 and f16 and run on the interpreter and lavapipe, against ONNX Runtime.
#[test]
fn vision_layers_exported_by_pytorch_match_onnx_runtime() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for target in ["cpu", "vulkan"] {
        let Some(mut dev) = open_or_skip(target) else {
            continue;
        };
        for name in ["seg_head_legacy", "video_legacy"] {
            let file = fixtures.join(format!("{name}.onnx"));
            let g = load(&file, &ImportOptions::default()).unwrap();
            let inputs = weft_graph::inputs::random_inputs(&g, 11);
            let Some(ort) = common::ort_run(&file, &inputs) else {
                return;
            };
            // f16 activations: a few roundings to 11 bits between input and output.
            for (precision, tolerance) in [(Precision::F32, TOLERANCE), (Precision::F16, 1e-2)] {
                let options = CompileOptions::default().with_precision(precision);
                let model = CompiledModel::compile(&g, &dev.limits(), &options).unwrap();
                let loaded = model.load(dev.as_mut()).unwrap();
                let got = loaded.run(dev.as_mut(), &inputs).unwrap();
                loaded.free(dev.as_mut());
                let err = common::relative_error(&got[0].mapv(f64::from), &ort[0]).unwrap();
                eprintln!("{name} on {target} in {precision:?}: weft vs ONNX Runtime {err:.2e}");
                assert!(
                    err <= tolerance,
                    "{name} on {target} in {precision:?}: {err:.2e}"
                );
            }
        }
    }
}

/// The zoo's BERT-base and GPT-2 at 8 tokens: exported by weft, run by ONNX Runtime on
/// the file, imported back, compiled and run on lavapipe (the interpreter would take
/// minutes on 110M parameters; the tiny exports above cover it).
#[test]
fn zoo_transformers_match_onnx_runtime() {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return;
    }
    let Some(mut dev) = open_or_skip("vulkan") else {
        return;
    };
    for name in ["bert_base", "gpt2"] {
        let opts = ZooOptions {
            seq: 8,
            ..ZooOptions::for_model(name).unwrap()
        };
        let g = zoo::build(name, &opts).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("{name}.onnx"));
        save(&g, &file).unwrap();
        let inputs = weft_graph::inputs::random_inputs(&g, 3);
        let Some(ort) = common::ort_run(&file, &inputs) else {
            return;
        };
        let imported = load(&file, &ImportOptions::default()).unwrap();
        let model =
            CompiledModel::compile(&imported, &dev.limits(), &CompileOptions::default()).unwrap();
        // GPT-2's token embedding (154 MB) is past lavapipe's 128 MiB buffers: it runs
        // in column blocks (`passes::split_wide_weights`).
        let loaded = model.load(dev.as_mut()).unwrap();
        let got = loaded.run(dev.as_mut(), &inputs).unwrap();
        loaded.free(dev.as_mut());
        assert_eq!(got.len(), ort.len(), "{name}: outputs");
        for (k, (w, o)) in got.iter().zip(&ort).enumerate() {
            let err = common::relative_error(&w.mapv(f64::from), o).unwrap();
            eprintln!("{name} output {k}: weft vs ONNX Runtime {err:.2e}");
            assert!(err <= TOLERANCE, "{name} output {k}: {err:.2e}");
        }
    }
}
