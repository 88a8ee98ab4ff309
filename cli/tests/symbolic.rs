//! `--dim NAME=MIN..MAX` and `weft model run --dim-value`: an ONNX encoder with a
//! `sequence` dim_param (the one `onnx/tests/symbolic_models.py` writes) compiled once and
//! run at three lengths on the interpreter, each checked against the float64 reference;
//! a length outside the range, a name that is no symbol, a malformed range and a node
//! weft cannot bound exit 2 naming what is wrong.

mod common;

use std::process::Command;

use common::{bad_input, ok};

/// The fixtures of `onnx/tests/symbolic_models.py`, written into a fresh folder; `None`
/// (skipped) without python3 and onnx, unless `WEFT_REQUIRE` names onnxruntime.
fn fixtures() -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../onnx/tests/symbolic_models.py"
    );
    let made = Command::new("python3").arg(script).arg(dir.path()).output();
    match made {
        Ok(o) if o.status.success() => Some(dir),
        other => {
            let why = format!("python3 with onnx could not write the fixtures: {other:?}");
            if std::env::var("WEFT_REQUIRE").is_ok_and(|v| v.split(',').any(|s| s == "onnxruntime"))
            {
                panic!("{why}");
            }
            eprintln!("skipped: {why}");
            None
        }
    }
}

#[test]
fn a_symbolic_model_is_compiled_once_and_run_at_each_length() {
    let Some(tmp) = fixtures() else { return };
    let enc = tmp.path().join("encoder.onnx");
    let enc = enc.to_str().unwrap();
    let range = ["--dim", "sequence=1..24", "--target", "cpu"];
    let mut args = vec!["model", "run", enc];
    args.extend(range);
    args.extend(["--dim-value", "sequence=1,17,24"]);
    let out = ok(&args);
    assert!(
        out.contains("sequence \u{2208} 1..24, compiled at 24"),
        "{out}"
    );
    assert_eq!(out.matches("compiled  once").count(), 1, "{out}");
    for n in [1, 17, 24] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("run       sequence={n}:")))
            .unwrap_or_else(|| panic!("no run at {n}:\n{out}"));
        assert!(line.contains(&format!("[1, {n}, 32]")), "{line}");
        assert!(line.contains("vs float64"), "{line}");
    }
    // Out of the range, a name that is no symbol, an empty range.
    let mut args = vec!["model", "run", enc];
    args.extend(range);
    args.extend(["--dim-value", "sequence=25"]);
    bad_input(&args, &["`sequence`", "outside the range 1..24"]);
    let mut args = vec!["model", "run", enc];
    args.extend(range);
    args.extend(["--dim-value", "seq=3"]);
    bad_input(&args, &["`seq`", "sequence"]);
    bad_input(
        &[
            "model",
            "run",
            enc,
            "--dim",
            "sequence=9..2",
            "--target",
            "cpu",
        ],
        &["sequence=9..2", "empty"],
    );
    // A node weft cannot bound, and a Shape of the symbol, named.
    let norm = tmp.path().join("norm_over_sequence.onnx");
    let mut args = vec!["model", "graph", norm.to_str().unwrap()];
    args.extend(range);
    bad_input(&args, &["`norm_over_sequence`", "`sequence`"]);
    let shape = tmp.path().join("shape_of_sequence.onnx");
    let mut args = vec!["model", "run", shape.to_str().unwrap()];
    args.extend(range);
    bad_input(&args, &["`length_of_sequence`", "`sequence`"]);
}
