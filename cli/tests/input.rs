//! Bad input the CLI refuses with exit 2 and a message naming what is wrong (issue 24):
//! keys given twice, unknown ops in filters, echoed arguments kept short and printable,
//! configs for schedules that take none, and output paths checked before work starts.

mod common;

use common::{bad_input, ok};

#[test]
fn a_key_given_twice_is_refused() {
    bad_input(
        &["ir", "--op", "matmul", "--shape", "m=1,m=2"],
        &[
            "shape for `matmul`",
            "parameter `m` is given twice (values 1 and 2)",
        ],
    );
    bad_input(
        &[
            "emit", "--op", "vecadd", "--shape", "n=4,n=8", "--target", "cuda",
        ],
        &["parameter `n` is given twice"],
    );
    // `--all` hands each op its own parameters; the one given twice is still named.
    bad_input(
        &["run", "--all", "--shape", "n=4,n=8", "--target", "cpu"],
        &["parameter `n` is given twice (values 4 and 8)"],
    );
    bad_input(
        &[
            "emit",
            "--op",
            "matmul",
            "--target",
            "cuda",
            "--config",
            "bk=8,bk=16",
        ],
        &[
            "--config for `matmul/template`",
            "parameter `bk` is given twice (values 8 and 16)",
        ],
    );
    bad_input(
        &[
            "run",
            "--op",
            "matmul",
            "--target",
            "cpu",
            "--config",
            "bk=8,wm=2,bk=8",
        ],
        &["parameter `bk` is given twice"],
    );
    // Target options were refused twice already; the message names the option.
    bad_input(
        &[
            "emit",
            "--op",
            "vecadd",
            "--target",
            "cuda -arch=sm_80 -arch=sm_90",
        ],
        &["option `-arch` given twice"],
    );
    // Each key once is fine.
    let out = ok(&["ir", "--op", "matmul", "--shape", "m=8,n=16,k=4"]);
    assert!(out.contains("(8, 16)") || out.contains("8, 16"), "{out}");
}

#[test]
fn report_refuses_an_unknown_op() {
    let out = std::env::temp_dir().join(format!("weft-input-report-{}", std::process::id()));
    let out_arg = out.to_string_lossy().into_owned();
    let ops = ["vecadd", "matmul", "conv2d", "depthwise-conv2d"];
    let mut needles = vec!["unknown op `foo`"];
    needles.extend(ops);
    // Whatever the command would do next: compile offline, run, or nothing but the page.
    for extra in [
        &["--no-run"][..],
        &["--targets", "cpu"][..],
        &["--no-run", "--no-compile"][..],
    ] {
        let mut args = vec!["report", "--ops", "vecadd,foo", "--out", &out_arg];
        args.extend(extra);
        bad_input(&args, &needles);
        assert!(!out.exists(), "weft {args:?} wrote {}", out.display());
    }
}

/// An argument repeated in an error: cut past 80 characters with the count, escapes
/// escaped, for every place that repeats one.
#[test]
fn echoed_arguments_are_short_and_printable() {
    let long = "a".repeat(10_000);
    let red = "\x1b[31mred";
    let cases: Vec<(Vec<String>, &str)> = vec![
        (args(&["ir", "--op", &long]), "unknown op"),
        (
            args(&["emit", "--op", &long, "--target", "cuda"]),
            "unknown op",
        ),
        (
            args(&["ir", "--op", "matmul", "--schedule", &long]),
            "has no schedule",
        ),
        (
            args(&["emit", "--op", "vecadd", "--target", &long]),
            "unknown target",
        ),
        (
            args(&[
                "emit",
                "--op",
                "vecadd",
                "--target",
                &format!("cuda -arch={long}"),
            ]),
            "is not a CUDA architecture",
        ),
        (
            args(&["ir", "--op", "vecadd", "--shape", &format!("n={long}")]),
            "is not an integer",
        ),
        (
            args(&["ir", "--op", "vecadd", "--shape", &format!("{long}=1")]),
            "unknown parameter",
        ),
        (
            args(&[
                "run",
                "--all",
                "--shape",
                &format!("{long}=1"),
                "--target",
                "cpu",
            ]),
            "belongs to no op",
        ),
        (
            args(&[
                "emit", "--op", "matmul", "--target", "cuda", "--config", &long,
            ]),
            "is not of the form name=value",
        ),
    ];
    for (args, what) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = bad_input(&args, &[what, "characters cut)", "…"]);
        assert!(
            err.len() < 1000 && !err.contains(&"a".repeat(81)),
            "weft {}: {} bytes of stderr:\n{err}",
            args[0],
            err.len()
        );
    }
    for args in [
        args(&["ir", "--op", red]),
        args(&["emit", "--op", "vecadd", "--target", red]),
        args(&["emit", "--op", "vecadd", "--target", &format!("cuda {red}")]),
        args(&["ir", "--op", "vecadd", "--shape", &format!("n={red}")]),
        args(&["run", "--all", "--schedule", red, "--target", "cpu"]),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = bad_input(&args, &["\\u{1b}[31mred"]);
        assert!(
            !err.contains('\x1b'),
            "weft {args:?}: raw escape in:\n{err}"
        );
    }
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn config_for_a_schedule_that_takes_none_names_the_one_that_does() {
    // An op with a template: the message names it.
    bad_input(
        &[
            "emit",
            "--op",
            "matmul",
            "--schedule",
            "naive",
            "--config",
            "bk=8",
            "--target",
            "cuda",
        ],
        &[
            "--config for `matmul/naive`",
            "schedule `naive` is not a template, so it takes no config",
            "`matmul`'s schedule `template` does",
            "--schedule template",
        ],
    );
    bad_input(
        &[
            "run",
            "--op",
            "depthwise-conv2d",
            "--schedule",
            "v2",
            "--config",
            "bk=8",
            "--target",
            "cpu",
        ],
        &["`depthwise-conv2d`'s schedule `tuned` does"],
    );
    // An op without one (its best schedule, as no --schedule is given): none of its
    // schedules does, and the ops that have a template are listed.
    bad_input(
        &["ir", "--op", "vecadd", "--config", "bk=8"],
        &[
            "--config for `vecadd/grid-stride`",
            "no schedule of `vecadd` does (split-bind, grid-stride are not templates)",
            "ops with a template: matmul (template)",
            "conv2d (implicit-gemm)",
        ],
    );
}

#[test]
fn tune_without_a_template_says_there_is_nothing_to_tune() {
    for args in [
        &["tune", "--op", "vecadd", "--target", "cpu"][..],
        &["tune", "--op", "window-sum", "--target", "cpu", "--list"][..],
    ] {
        bad_input(
            args,
            &[
                "has nothing to tune",
                "--config",
                "`weft run --op",
                "Ops with a template: matmul (template)",
                "depthwise-conv2d (tuned)",
            ],
        );
    }
}

/// A scratch folder of this test process, empty.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-input-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

#[test]
fn output_paths_are_checked_before_the_work() {
    let dir = scratch("outputs");
    let file = dir.join("taken");
    std::fs::write(&file, "x").unwrap_or_else(|e| panic!("{e}"));
    let (d, f) = (dir.to_string_lossy(), file.to_string_lossy());
    let missing = dir.join("no/such/run.json");
    let m = missing.to_string_lossy();
    let bench = [
        "bench",
        "--targets",
        "cpu",
        "--ops",
        "matmul",
        "--iters",
        "1",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        bench.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let cases: Vec<(Vec<String>, Vec<String>)> = vec![
        (
            with(&["--json", &d]),
            vec![format!("--json `{d}`"), "it is a folder".into()],
        ),
        (
            with(&["--json", &m]),
            vec![format!("--json `{m}`"), "no/such` does not exist".into()],
        ),
        (
            args(&["run", "--op", "vecadd", "--target", "cpu", "--save", &f]),
            vec![format!("--save `{f}`"), "it is a file".into()],
        ),
        (
            args(&[
                "report",
                "--out",
                &f,
                "--targets",
                "cpu",
                "--ops",
                "vecadd",
                "--no-compile",
            ]),
            vec![format!("--out `{f}`"), "it is a file".into()],
        ),
        (
            args(&["tune", "--op", "matmul", "--target", "cpu", "--records", &d]),
            vec![format!("`{d}`"), "directory".into()],
        ),
    ];
    for (a, needles) in &cases {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        let started = std::time::Instant::now();
        let out = common::weft(&a);
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "weft {a:?}:\n{err}");
        for n in &needles {
            assert!(err.contains(n), "weft {a:?}: `{n}` not in:\n{err}");
        }
        // Refused before measuring anything: nothing on stdout, and at once.
        assert!(out.stdout.is_empty(), "weft {a:?} printed results first");
        assert!(started.elapsed().as_secs() < 5, "weft {a:?} worked first");
    }
    assert_eq!(std::fs::read_to_string(&file).ok().as_deref(), Some("x"));
    // A folder that cannot be written, even by root: sysfs refuses new files.
    if std::path::Path::new("/sys/kernel").is_dir() {
        bad_input(
            &[
                "run",
                "--op",
                "vecadd",
                "--target",
                "cpu",
                "--save",
                "/sys/kernel/weft-out",
            ],
            &[
                "--save `/sys/kernel/weft-out`",
                "cannot write in `/sys/kernel`",
            ],
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
