//! Progress on a stderr that is not a terminal (a log, CI): plain lines, no escape codes
//! (indicatif drew nothing there, and a run of minutes looked hung).

mod common;

use std::process::Command;

use common::stderr;

fn weft_logged(args: &[&str], interval: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args(args);
    match interval {
        Some(s) => cmd.env("WEFT_PROGRESS_INTERVAL", s),
        None => cmd.env_remove("WEFT_PROGRESS_INTERVAL"),
    };
    // `output()` pipes stderr: not a terminal.
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not start weft {args:?}: {e}"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "weft {args:?}:\n{err}");
    assert!(!err.contains('\x1b'), "escape codes in a log:\n{err:?}");
    err
}

#[test]
fn tune_writes_plain_progress_lines() {
    let args = [
        "tune",
        "--op",
        "matmul",
        "--target",
        "cpu",
        "--no-save",
        "--sample",
        "3",
    ];
    // By default: a line as each phase starts, and few others. (The sample of 3 may
    // grow by one: the rule's config is always timed.)
    let err = weft_logged(&args, None);
    for phase in ["building 0/", "compiling", "timing 0/"] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("weft: tune matmul: {phase}"))),
            "no `{phase}` line:\n{err}"
        );
    }
    assert!(
        err.lines().count() <= 8,
        "too many lines for a short run:\n{err}"
    );
    // Every step, with the best time so far.
    let err = weft_logged(&args, Some("0"));
    let timing: Vec<&str> = err.lines().filter(|l| l.contains(" timing ")).collect();
    // 3 configs, or 4 with the rule's (see above).
    let n = timing.len() - 1;
    assert!(n == 3 || n == 4, "{err}");
    assert!(
        timing[n].starts_with(&format!("weft: tune matmul: timing {n}/{n} configs, best "))
            && timing[n].ends_with('s'),
        "{err}"
    );
}

#[test]
fn bench_writes_plain_progress_lines() {
    let err = weft_logged(
        &[
            "bench",
            "--targets",
            "cpu",
            "--ops",
            "vecadd",
            "--iters",
            "1",
        ],
        Some("0"),
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "weft: bench: measuring 0/2 runs",
            "weft: bench: measuring 1/2 runs (vecadd/split-bind n=1000 on cpu)",
            "weft: bench: measuring 2/2 runs (vecadd/grid-stride n=1000 on cpu)",
        ],
        "{err}"
    );
}
