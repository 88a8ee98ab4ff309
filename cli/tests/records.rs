//! Tuning records through the `weft` binary: concurrent `weft tune` processes lose no
//! record, a torn records file stops nothing (it is warned about and set aside, never
//! overwritten), and a place `tune` cannot save to is refused before any tuning. All on
//! the `cpu` target with small shapes and a sample of two configs: a tune takes a tenth
//! of a second.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{stderr, stdout};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-records-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

/// `weft args` with `WEFT_RECORDS` set to `records` (the default place, as a user's
/// cache file would be) or, with `None`, with no place at all.
fn weft_with(records: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_weft"));
    cmd.args(args)
        .env_remove("WEFT_RECORDS")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME");
    if let Some(r) = records {
        cmd.env("WEFT_RECORDS", r);
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("could not start weft {args:?}: {e}"))
}

fn tune_args(shape: &str) -> Vec<String> {
    [
        "tune", "--op", "matmul", "--target", "cpu", "--sample", "2", "--shape", shape,
    ]
    .map(String::from)
    .to_vec()
}

fn records_in(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

#[test]
fn concurrent_tunes_into_one_file_lose_nothing() {
    const PROCESSES: usize = 4;
    const EACH: usize = 3;
    let dir = scratch("concurrent");
    let path = dir.join("records.json");
    // Records already there, about the size of a real file (~1 MB): reading and writing
    // it takes long enough for unlocked writers to overwrite each other.
    let old: Vec<serde_json::Value> = (0..2500)
        .map(|i| {
            serde_json::json!({
                "op": "matmul", "schedule": "template", "shape": format!("m={i},n=1,k=1"),
                "dtype": "float32", "target": "cuda", "device": "elsewhere",
                "weft_version": "0.1.0", "config": "wm=1", "time_us": 1.0,
                "reference_us": null, "space": 1, "timed": 1, "tuning_seconds": 1.0,
                "unix_time": 1
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&old).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));

    let shapes: Vec<Vec<String>> = (0..PROCESSES)
        .map(|p| {
            (0..EACH)
                .map(|i| format!("m={},n=8,k=8", 4 + p * EACH + i))
                .collect()
        })
        .collect();
    std::thread::scope(|s| {
        for list in &shapes {
            let path = &path;
            s.spawn(move || {
                for shape in list {
                    let args = tune_args(shape);
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let out = weft_with(Some(path), &args);
                    assert_eq!(
                        out.status.code(),
                        Some(0),
                        "weft {args:?}:\n{}\n{}",
                        stdout(&out),
                        stderr(&out)
                    );
                }
            });
        }
    });

    let records = records_in(&path);
    let missing: Vec<&String> = shapes
        .iter()
        .flatten()
        .filter(|shape| {
            !records
                .iter()
                .any(|r| r["shape"] == shape.as_str() && r["target"] == "cpu")
        })
        .collect();
    assert!(missing.is_empty(), "records lost for {missing:?}");
    assert_eq!(records.len(), old.len() + PROCESSES * EACH);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_torn_records_file_is_warned_about_and_set_aside_never_lost() {
    let dir = scratch("torn");
    let path = dir.join("tuning-records.json");
    let shape = "m=9,n=9,k=9";
    let args = tune_args(shape);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = weft_with(Some(&path), &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Torn in the middle, as a killed writer left it before writes were whole.
    let whole = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let torn = &whole[..whole.len() / 2];
    std::fs::write(&path, torn).unwrap_or_else(|e| panic!("{e}"));

    // `run` works, with the template's default, for a template and for another schedule.
    for schedule in ["template", "naive"] {
        let out = weft_with(
            Some(&path),
            &[
                "run",
                "--op",
                "matmul",
                "--schedule",
                schedule,
                "--shape",
                shape,
                "--target",
                "cpu",
            ],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "run {schedule}:\n{err}");
        assert!(
            err.contains("weft: warning: tuning records")
                && err.contains(&path.display().to_string())
                && err.contains("EOF while parsing")
                && err.contains(".corrupt-"),
            "{err}"
        );
        assert_eq!(err.matches("warning").count(), 1, "warned once:\n{err}");
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}")),
        torn,
        "reading changed the file"
    );

    // `tune` keeps the torn file aside and starts a new one.
    let out = weft_with(Some(&path), &args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("kept them as") && err.contains("started a new file"),
        "{err}"
    );
    let aside: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .map(|e| e.map(|e| e.path()).unwrap_or_else(|e| panic!("{e}")))
        .filter(|p| p.to_string_lossy().contains("tuning-records.json.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read_to_string(&aside[0]).ok().as_deref(),
        Some(torn)
    );
    assert!(err.contains(&aside[0].display().to_string()), "{err}");
    assert_eq!(records_in(&path).len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tune_refuses_a_place_it_cannot_save_to_before_tuning() {
    let dir = scratch("unwritable");
    let args = tune_args("m=8,n=8,k=8");
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    let check = |out: Output, needles: &[&str]| {
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        for n in needles {
            assert!(err.contains(n), "`{n}` not in:\n{err}");
        }
        // Refused before the tuner started: it prints `tuning ...` first thing.
        assert!(!stdout(&out).contains("tuning"), "{}", stdout(&out));
    };
    let folder = dir.to_string_lossy().into_owned();
    check(
        weft_with(Some(&dir), &args),
        &[&format!("`{folder}`"), "is a directory"],
    );
    // Under a file: the folder cannot be created.
    let file = dir.join("plain");
    std::fs::write(&file, "x").unwrap_or_else(|e| panic!("{e}"));
    let under = file.join("records.json");
    let under_s = under.to_string_lossy().into_owned();
    args.extend(["--records", &under_s]);
    check(
        weft_with(None, &args),
        &[&format!("`{under_s}`"), "cannot create the folder"],
    );
    // No HOME, XDG_CACHE_HOME or WEFT_RECORDS and no --records: no place at all.
    args.truncate(args.len() - 2);
    check(weft_with(None, &args), &["no place for tuning records"]);
    // --no-save needs no place.
    args.push("--no-save");
    let out = weft_with(None, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
