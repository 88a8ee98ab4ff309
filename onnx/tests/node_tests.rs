//! ONNX's backend node tests: every test whose ops weft imports is imported, evaluated by
//! the float64 reference and compared with ONNX's expected outputs; the ones weft refuses
//! must be refused with a typed error, and be listed in `EXPECTED_REFUSALS`.
//!
//! The onnx 1.23 wheel ships no node test data: `tests/gen_node_tests.py` writes it from
//! the generators in onnx's source distribution. Point `WEFT_ONNX_NODE_TESTS` at that
//! folder (or at an onnx wheel's `backend/test/data/node`); without it the test skips,
//! unless `WEFT_REQUIRE` names `onnx-node-tests`.

mod common;

use std::path::{Path, PathBuf};

use ndarray::ArrayD;
use prost::Message;
use weft_graph::reference;
use weft_onnx::proto::{ModelProto, TensorProto};
use weft_onnx::versions::{MAX_OPSET, imported};
use weft_onnx::{ImportError, ImportOptions, from_model, tensor_to_array};

/// Node tests that use only ops weft imports but that weft refuses: a test name prefix,
/// a fragment the typed error's message must contain, and why.
const EXPECTED_REFUSALS: &[(&str, &str, &str)] = &[
    // Integer, bool and bfloat16 tensors: weft's graphs compute in float or float16.
    ("test_add_int", "is INT", "integer inputs"),
    ("test_add_uint", "is UINT", "integer inputs"),
    ("test_sub_int", "is INT", "integer inputs"),
    ("test_sub_uint", "is UINT", "integer inputs"),
    ("test_mul_int", "is INT", "integer inputs"),
    ("test_mul_uint", "is UINT", "integer inputs"),
    ("test_div_int", "is INT", "integer inputs"),
    ("test_div_uint", "is UINT", "integer inputs"),
    ("test_max_int", "is INT", "integer inputs"),
    ("test_max_uint", "is UINT", "integer inputs"),
    ("test_min_int", "is INT", "integer inputs"),
    ("test_min_uint", "is UINT", "integer inputs"),
    (
        "test_pow_types_",
        "INT",
        "an integer base or exponent as an input",
    ),
    ("test_clip_default_int8", "is INT8", "integer inputs"),
    ("test_maxpool_2d_uint8", "is UINT8", "integer inputs"),
    ("test_celu_bfloat16", "is BFLOAT16", "bfloat16 inputs"),
    (
        "test_training_dropout",
        "is BOOL",
        "training_mode as a bool input",
    ),
    // Reshape's target shape as a graph input: weft fixes shapes at import.
    (
        "test_reshape_",
        "input `shape`: is INT64",
        "a computed target shape",
    ),
    // Resize's scales, sizes and roi as graph inputs (weft fixes shapes at import);
    // antialiased resizing; Upsample, from opset 9.
    (
        "test_resize_",
        "must be a constant",
        "scales, sizes or roi as graph inputs",
    ),
    ("test_resize_", "antialias", "antialiased resizing"),
    ("test_upsample_", "opset 9", "written at opset 9"),
    // MaxPool's indices.
    (
        "test_maxpool_with_argmax",
        "(the indices) is used",
        "MaxPool's indices",
    ),
    // Training.
    (
        "test_batchnorm_e",
        "training_mode",
        "training batch normalization",
    ),
    (
        "test_dropout_default_mask",
        "(the mask) is used",
        "Dropout's mask",
    ),
    ("test_dropout_", "opset 11", "written at opset 11"),
];

/// Elementwise relative tolerance against ONNX's expected outputs (computed in f32 or
/// f64 by numpy; weft computes in f64 from the f32 inputs).
const TOLERANCE: f64 = 1e-5;

/// Tests whose expected outputs are coarser, with the tolerance they need and why.
const LOOSER: &[(&str, f64, &str)] = &[(
    "test_averagepool_2d_ceil_last_window_starts_on_pad",
    1e-3,
    "the expected values are written to 4 digits (ONNX Runtime agrees with weft to 1e-7)",
)];

fn data_dir() -> Option<PathBuf> {
    if let Ok(d) = std::env::var("WEFT_ONNX_NODE_TESTS") {
        return Some(PathBuf::from(d));
    }
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', 'node'))",
        ])
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.is_dir().then_some(p)
}

fn read_pb(p: &Path) -> ArrayD<f32> {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let t =
        TensorProto::decode(bytes.as_slice()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    tensor_to_array(&t).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn read_set(dir: &Path, prefix: &str) -> Vec<ArrayD<f32>> {
    (0..)
        .map(|i| dir.join(format!("{prefix}_{i}.pb")))
        .take_while(|p| p.exists())
        .map(|p| read_pb(&p))
        .collect()
}

enum Outcome {
    Passed,
    Refused(String),
    Failed(String),
}

/// Imports `model`, evaluates it on every data set and compares.
fn run(model: &ModelProto, dir: &Path, tolerance: f64) -> Outcome {
    let graph = match from_model(model, &ImportOptions::default()) {
        Ok(g) => g,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    for set in std::fs::read_dir(dir).unwrap().flatten() {
        let set = set.path();
        if !set.is_dir() {
            continue;
        }
        let inputs: Vec<ArrayD<f64>> = read_set(&set, "input")
            .into_iter()
            .map(|a| a.mapv(f64::from))
            .collect();
        let want = read_set(&set, "output");
        let got = match reference::evaluate(&graph, &inputs) {
            Ok(g) => g,
            Err(e) => return Outcome::Failed(format!("reference: {e}")),
        };
        if got.len() != want.len() {
            return Outcome::Failed(format!("{} outputs, {} expected", got.len(), want.len()));
        }
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            match common::relative_error(g, w) {
                Ok(err) if err <= tolerance => {}
                Ok(err) => return Outcome::Failed(format!("output {k}: relative error {err:e}")),
                Err(e) => return Outcome::Failed(format!("output {k}: {e}")),
            }
        }
    }
    Outcome::Passed
}

#[test]
fn backend_node_tests() {
    let Some(root) = data_dir() else {
        common::skip(
            "onnx-node-tests",
            "no ONNX node test data: set WEFT_ONNX_NODE_TESTS (see tests/gen_node_tests.py)",
        );
        return;
    };
    let known = imported();
    let imported = |op: &str| known.iter().any(|(name, _)| *name == op);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("model.onnx").exists())
        .collect();
    dirs.sort();
    let (mut passed, mut passed_clamped, mut refused, mut other) = (0, 0, Vec::new(), 0);
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(dir.join("model.onnx")).unwrap();
        let mut model = ModelProto::decode(bytes.as_slice()).expect("node test models decode");
        let graph = model.graph.as_ref().expect("node test models have graphs");
        if !graph
            .node
            .iter()
            .all(|n| n.domain.is_empty() && imported(&n.op_type))
        {
            // Ops weft does not import: a typed refusal, never a panic.
            match from_model(&model, &ImportOptions::default()) {
                Err(_) => other += 1,
                Ok(_) => failures.push(format!(
                    "{name}: imported, but has an op weft does not import"
                )),
            }
            continue;
        }
        // Tests written at opsets past 22 are refused as they are, then run at opset 22
        // (the ops weft imports only gained element types since).
        let opset = model
            .opset_import
            .iter()
            .find(|o| o.domain.is_empty())
            .map(|o| o.version);
        let clamped = opset.is_some_and(|v| v > MAX_OPSET);
        if clamped {
            match from_model(&model, &ImportOptions::default()) {
                Err(ImportError::Opset(_)) => {}
                other => failures.push(format!("{name}: opset {opset:?} not refused: {other:?}")),
            }
            for o in &mut model.opset_import {
                if o.domain.is_empty() {
                    o.version = MAX_OPSET;
                }
            }
        }
        let tolerance = LOOSER
            .iter()
            .find(|(n, _, _)| *n == name)
            .map_or(TOLERANCE, |&(_, t, _)| t);
        match run(&model, dir, tolerance) {
            Outcome::Passed if clamped => passed_clamped += 1,
            Outcome::Passed => passed += 1,
            Outcome::Refused(why) => {
                let expected = EXPECTED_REFUSALS
                    .iter()
                    .any(|(p, fragment, _)| name.starts_with(p) && why.contains(fragment));
                if !expected {
                    failures.push(format!("{name}: refused unexpectedly: {why}"));
                }
                refused.push((name, why));
            }
            Outcome::Failed(why) => failures.push(format!("{name}: {why}")),
        }
    }
    eprintln!(
        "node tests: {} in all; of those with only imported ops, {passed} passed at their opset, {passed_clamped} passed at opset {MAX_OPSET} (written at a later one), {} refused with typed errors; {other} with other ops refused with typed errors",
        dirs.len(),
        refused.len()
    );
    for (name, why) in &refused {
        eprintln!("  refused {name}: {why}");
    }
    for f in &failures {
        eprintln!("  FAILED {f}");
    }
    assert!(failures.is_empty(), "{} node tests failed", failures.len());
    for (prefix, _, _) in EXPECTED_REFUSALS {
        assert!(
            refused.iter().any(|(n, _)| n.starts_with(prefix)),
            "`{prefix}` is listed as refused but no such test was refused"
        );
    }
}
