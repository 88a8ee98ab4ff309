//! Initializers whose bytes live in a file beside the model (ONNX external data: how
//! every model past protobuf's 2 GB is saved, optimum's `model.onnx_data`): a model saved
//! with `save_as_external_data` (written by `external_models.py`) loads and runs like ONNX
//! Runtime on the same file; a location outside the model's folder, a missing file and a
//! length past the file's end are refused naming the tensor; a model given as bytes
//! without its folder is refused naming the tensor.

mod common;

use ndarray::{ArrayD, IxDyn};
use weft_model::{CompileOptions, CompiledModel};
use weft_onnx::{ImportError, ImportOptions, load};
use weft_testkit::devices::open_or_skip;

fn models() -> Option<tempfile::TempDir> {
    if let Some(why) = common::python_missing() {
        common::skip("onnxruntime", &why);
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    common::python("external_models.py", &[dir.path()]);
    Some(dir)
}

#[test]
fn a_model_with_external_weights_runs_like_onnx_runtime() {
    let Some(dir) = models() else {
        return;
    };
    let file = dir.path().join("model.onnx");
    let g = load(&file, &ImportOptions::default()).unwrap();
    let x = ArrayD::from_shape_fn(IxDyn(&[2, 16]), |ix| {
        ((ix[0] * 16 + ix[1]) as f32 * 0.37).sin()
    });
    let want = common::ort_run(&file, std::slice::from_ref(&x)).unwrap();
    let mut dev = open_or_skip("cpu").unwrap();
    let model = CompiledModel::compile(&g, &dev.limits(), &CompileOptions::default()).unwrap();
    let exe = model.load(dev.as_mut()).unwrap();
    let got = exe.run(dev.as_mut(), &[x]).unwrap();
    exe.free(dev.as_mut());
    let err = common::relative_error(&got[0].mapv(f64::from), &want[0]).unwrap();
    assert!(err < 1e-5, "{err}");
    // The same model as bytes, without its folder: refused, naming the tensor.
    let bytes = std::fs::read(&file).unwrap();
    let e = weft_onnx::from_bytes(&bytes, &ImportOptions::default()).unwrap_err();
    assert!(
        matches!(e, ImportError::ExternalData(ref t) if t == "w1"),
        "{e}"
    );
}

#[test]
fn external_data_outside_the_folder_missing_or_short_is_refused() {
    let Some(dir) = models() else {
        return;
    };
    for (name, needle) in [
        ("escape.onnx", "inside the model's folder"),
        ("missing.onnx", "nothere.bin"),
        ("short.onnx", "past its end"),
    ] {
        let e = load(&dir.path().join(name), &ImportOptions::default()).unwrap_err();
        assert!(
            matches!(&e, ImportError::Tensor { tensor, .. } if tensor == "w1"),
            "{name}: {e}"
        );
        assert!(e.to_string().contains(needle), "{name}: {e}");
    }
}
