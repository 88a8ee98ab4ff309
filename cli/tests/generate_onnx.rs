//! `weft model generate FILE.onnx` on a decoder exported with past keys and values
//! (PyTorch's TorchScript export of Hugging Face's Llama in optimum's form,
//! `onnx/tests/fixtures/past/`, its weights filled by `onnx/tests/past_generate.py`): the
//! ids ONNX Runtime's greedy loop over the same file gives, and `--check` (the float64
//! evaluator over the file without a cache) passing, on `cpu` in f32 and on lavapipe in
//! f16; what does not apply to an ONNX file refused with exit 2, naming the option.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bad_input, ok};

fn skip(why: &str) {
    let required =
        std::env::var("WEFT_REQUIRE").is_ok_and(|v| v.split(',').any(|s| s == "onnxruntime"));
    assert!(
        !required,
        "onnxruntime is required (WEFT_REQUIRE) but unavailable: {why}"
    );
    eprintln!("skipped: {why} (set WEFT_REQUIRE=onnxruntime to make this a failure)");
}

/// The filled model in `dir` and ONNX Runtime's ids for `prompt`, or `None` (the skip
/// printed) where python3 with onnx and onnxruntime cannot give them.
fn reference(dir: &Path, prompt: &str, new: usize) -> Option<(PathBuf, String)> {
    let onnx_tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../onnx/tests");
    let out = Command::new("python3")
        .arg(onnx_tests.join("past_generate.py"))
        .arg(onnx_tests.join("fixtures/past/llama_torchscript.onnx"))
        .arg(dir)
        .arg(prompt)
        .arg(new.to_string())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout).to_string();
            let ids = text
                .lines()
                .find_map(|l| l.strip_prefix("ids "))?
                .to_string();
            Some((dir.join("model.onnx"), ids))
        }
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr);
            skip(&format!(
                "python3 with onnx and onnxruntime could not run past_generate.py: {}",
                why.lines().last().unwrap_or("")
            ));
            None
        }
        Err(e) => {
            skip(&format!("python3 cannot be started: {e}"));
            None
        }
    }
}

fn vulkan() -> bool {
    let out = common::weft(&["targets"]);
    String::from_utf8_lossy(&out.stdout).contains("vulkan")
}

#[test]
fn an_onnx_decoder_with_past_generates_onnx_runtimes_ids() {
    let dir = tempfile::tempdir().unwrap();
    let Some((model, want)) = reference(dir.path(), "1,5,9,200,17", 6) else {
        return;
    };
    let model = model.to_str().unwrap();
    let mut runs = vec![("cpu", "f32")];
    if vulkan() {
        runs.push(("vulkan", "f16"));
    }
    for (target, dtype) in runs {
        let text = ok(&[
            "model",
            "generate",
            model,
            "--target",
            target,
            "--dtype",
            dtype,
            "--prompt-ids",
            "1,5,9,200,17",
            "--new-tokens",
            "6",
            "--iters",
            "2",
            "--check",
        ]);
        assert!(
            text.contains(&format!("sequence 0: {want}")),
            "{target} {dtype}: ONNX Runtime generates {want}\n{text}"
        );
        for needle in [
            "4 past_key_values inputs written in place",
            "compiled once for every position",
            "check            the float64 reference (the same file, no cache) generates the same ids",
        ] {
            assert!(
                text.contains(needle),
                "{target} {dtype}: no `{needle}`\n{text}"
            );
        }
    }
}

#[test]
fn what_does_not_apply_to_an_onnx_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some((model, _)) = reference(dir.path(), "1,2", 2) else {
        return;
    };
    let model = model.to_str().unwrap();
    let base = ["model", "generate", model, "--target", "cpu"];
    let with = |extra: &[&'static str]| -> Vec<&str> {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    bad_input(
        &with(&["--prompt", "hello"]),
        &["--prompt TEXT", "tokenizer"],
    );
    bad_input(&with(&["--hidden", "64"]), &["--hidden", "zoo:llama"]);
    bad_input(&with(&["--max-prompt", "16"]), &["--max-prompt"]);
    bad_input(
        &with(&["--prompt-ids", "1,5000"]),
        &["5000", "vocabulary of 1000"],
    );
    // `weft model run` on it says where it runs.
    bad_input(
        &["model", "run", model, "--target", "cpu"],
        &["past_key_values.0.key", "weft model generate"],
    );
}
