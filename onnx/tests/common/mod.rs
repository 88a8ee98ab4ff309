//! Helpers shared by the tests: skipping or failing where a tool is missing, comparing
//! arrays, and running models through ONNX Runtime.

#![allow(dead_code)] // each test binary uses part of this

use std::path::{Path, PathBuf};
use std::process::Command;

use ndarray::ArrayD;

/// True where `WEFT_REQUIRE` (a comma-separated list) names `what`: a missing tool then
/// fails the test instead of skipping it.
pub fn required(what: &str) -> bool {
    std::env::var("WEFT_REQUIRE")
        .map(|v| v.split(',').any(|s| s.trim() == what))
        .unwrap_or(false)
}

/// Skips (prints why and returns) or, where `WEFT_REQUIRE` names `what`, fails.
pub fn skip(what: &str, why: &str) {
    if required(what) {
        panic!("{what} is required (WEFT_REQUIRE) but unavailable: {why}");
    }
    eprintln!("skipped: {why} (set WEFT_REQUIRE={what} to make this a failure)");
}

/// This test folder.
pub fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Why python3 with onnx, onnxruntime and numpy cannot run here, if it cannot.
pub fn python_missing() -> Option<String> {
    match Command::new("python3")
        .args(["-c", "import onnx, onnxruntime, numpy"])
        .output()
    {
        Err(e) => Some(format!("python3 cannot be started: {e}")),
        Ok(o) if !o.status.success() => Some(format!(
            "python3 lacks onnx, onnxruntime or numpy: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Ok(_) => None,
    }
}

/// Runs `python3 tests/SCRIPT args`, panicking with its output where it fails.
pub fn python(script: &str, args: &[&Path]) {
    let out = Command::new("python3")
        .arg(tests_dir().join(script))
        .args(args)
        .output()
        .expect("python3 starts");
    assert!(
        out.status.success(),
        "{script} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Reads `dir/{prefix}_{i}.npy` for i = 0, 1, ... as f32 arrays.
pub fn read_npys(dir: &Path, prefix: &str) -> Vec<ArrayD<f32>> {
    let mut out = Vec::new();
    loop {
        let p = dir.join(format!("{prefix}_{}.npy", out.len()));
        if !p.exists() {
            return out;
        }
        let a: ArrayD<f32> =
            ndarray_npy::read_npy(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
        out.push(a);
    }
}

/// The outputs of the model at `model` for `inputs`, computed by ONNX Runtime on the
/// CPU; `None` (with the reason printed) where python3 or onnxruntime is missing and
/// `WEFT_REQUIRE` does not name onnxruntime.
pub fn ort_run(model: &Path, inputs: &[ArrayD<f32>]) -> Option<Vec<ArrayD<f32>>> {
    if let Some(why) = python_missing() {
        skip("onnxruntime", &why);
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    for (i, x) in inputs.iter().enumerate() {
        ndarray_npy::write_npy(dir.path().join(format!("input_{i}.npy")), x).expect("write npy");
    }
    python("ort_run.py", &[model, dir.path()]);
    Some(read_npys(dir.path(), "output"))
}

/// The largest difference of `got` from `want` relative to `want`'s largest magnitude
/// (at least 1), or why they cannot be compared. NaNs must match NaNs, infinities
/// infinities.
pub fn relative_error(got: &ArrayD<f64>, want: &ArrayD<f32>) -> Result<f64, String> {
    if got.shape() != want.shape() {
        return Err(format!(
            "shape {:?}, expected {:?}",
            got.shape(),
            want.shape()
        ));
    }
    let scale = want
        .iter()
        .filter(|v| v.is_finite())
        .fold(1.0f64, |m, &v| m.max(f64::from(v).abs()));
    let mut worst = 0.0f64;
    for (i, (&g, &w)) in got.iter().zip(want.iter()).enumerate() {
        let w = f64::from(w);
        if w.is_nan() || g.is_nan() || w.is_infinite() || g.is_infinite() {
            let same = (w.is_nan() && g.is_nan()) || (w == g) || (g as f32 as f64) == w;
            if !same {
                return Err(format!("element {i}: {g} where {w} is expected"));
            }
            continue;
        }
        worst = worst.max((g - w).abs() / scale);
    }
    Ok(worst)
}
