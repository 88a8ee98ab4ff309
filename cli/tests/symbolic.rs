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
    args.extend(["--dim-value", "sequence=1,17,24", "--buckets", "none"]);
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

/// `--buckets`: the range cut at 16 (the rule's first bucket), each bucket compiled at
/// its maximum and each run taking the bucket holding its length, checked as before;
/// buckets given by their last lengths; bounds outside the range or not increasing exit 2.
#[test]
fn a_symbolic_model_runs_each_length_on_the_bucket_holding_it() {
    let Some(tmp) = fixtures() else { return };
    let enc = tmp.path().join("encoder.onnx");
    let enc = enc.to_str().unwrap();
    let base = [
        "model",
        "run",
        enc,
        "--dim",
        "sequence=1..24",
        "--target",
        "cpu",
        "--iters",
        "2",
        "--dim-value",
        "sequence=1,16,17,24",
    ];
    let out = ok(&base);
    assert!(
        out.contains("sequence \u{2208} 1..24 in 2 buckets"),
        "{out}"
    );
    assert!(
        out.contains("bucket    sequence=1..16: every kernel launched at 16"),
        "{out}"
    );
    assert!(
        out.contains("bucket    sequence=17..24: every kernel launched at 24"),
        "{out}"
    );
    assert!(out.contains("of weights shared by the buckets"), "{out}");
    for (n, bucket) in [(1, "1..16"), (16, "1..16"), (17, "17..24"), (24, "17..24")] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("run       sequence={n} (bucket {bucket}):")))
            .unwrap_or_else(|| panic!("no run at {n} on {bucket}:\n{out}"));
        assert!(line.contains(&format!("[1, {n}, 32]")), "{line}");
        assert!(
            line.contains("vs float64") && line.contains("device "),
            "{line}"
        );
    }
    let given = |b: &str| {
        let mut args = base.to_vec();
        args.extend(["--buckets", b]);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let args = given("4,20");
    let out = ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.contains("in 3 buckets"), "{out}");
    assert!(
        out.contains("run       sequence=17 (bucket 5..20)"),
        "{out}"
    );
    for (b, words) in [
        ("30", &["--buckets `30`", "1..24"][..]),
        ("8,4", &["--buckets `8,4`", "increasing"]),
        ("x", &["--buckets `x`", "auto, none"]),
    ] {
        let args = given(b);
        bad_input(&args.iter().map(String::as_str).collect::<Vec<_>>(), words);
    }
}
