//! Running the `weft` binary from tests: exit status and stderr checks.

#![allow(dead_code)] // each test file uses a different subset

use std::process::{Command, Output};

/// Runs `weft args`.
pub fn weft(args: &[&str]) -> Output {
    match Command::new(env!("CARGO_BIN_EXE_weft")).args(args).output() {
        Ok(out) => out,
        Err(e) => panic!("could not start weft {args:?}: {e}"),
    }
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `weft args`, expects exit 0, returns stdout.
pub fn ok(args: &[&str]) -> String {
    let out = weft(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "weft {args:?} failed\nstdout:\n{}\nstderr:\n{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

/// Runs `weft args`, expects exit 2 and a message on stderr mentioning every one of
/// `needles`; returns stderr.
pub fn bad_input(args: &[&str], needles: &[&str]) -> String {
    let out = weft(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "weft {args:?}: stderr:\n{err}");
    for n in needles {
        assert!(
            err.contains(n),
            "weft {args:?}: `{n}` not in stderr:\n{err}"
        );
    }
    err
}
