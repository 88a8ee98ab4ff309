//! A stdout that cannot be written: a full disk is one line on stderr and exit 1, a
//! closed pipe ends quietly; neither panics (`print!` did: exit 101 and a backtrace).

mod common;

use std::fs::File;
use std::io::Read;
use std::process::{Command, Stdio};

use common::stderr;

/// Runs `weft args` with stdout on `/dev/full`, where every write fails with ENOSPC.
fn onto_full_disk(args: &[&str]) -> std::process::Output {
    let full = File::options()
        .write(true)
        .open("/dev/full")
        .unwrap_or_else(|e| panic!("opening /dev/full: {e}"));
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .stdout(full)
        .output()
        .unwrap_or_else(|e| panic!("could not start weft {args:?}: {e}"))
}

#[test]
fn a_full_disk_is_one_message_and_exit_1() {
    let commands: [&[&str]; 4] = [
        &["ops"],
        &["targets"],
        &["emit", "--op", "vecadd", "--target", "cuda"],
        &["run", "--op", "vecadd", "--target", "cpu", "--iters", "1"],
    ];
    for args in commands {
        let out = onto_full_disk(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "weft {args:?}: stderr:\n{err}");
        assert!(!err.contains("panicked"), "weft {args:?} panicked:\n{err}");
        assert_eq!(
            err.trim_end().lines().last(),
            Some("weft: writing to stdout: No space left on device (os error 28)"),
            "weft {args:?}: stderr:\n{err}"
        );
    }
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let commands: [&[&str]; 2] = [&["ops"], &["emit", "--op", "conv2d", "--target", "cuda"]];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start weft {args:?}: {e}"));
        // The reader goes away before weft writes: starting the process and opening the
        // op tables takes milliseconds, the drop microseconds.
        drop(child.stdout.take());
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            e.read_to_string(&mut err)
                .unwrap_or_else(|e| panic!("reading stderr: {e}"));
        }
        let status = child
            .wait()
            .unwrap_or_else(|e| panic!("waiting for weft: {e}"));
        assert!(!err.contains("panicked"), "weft {args:?} panicked:\n{err}");
        assert!(err.is_empty(), "weft {args:?} said something:\n{err}");
        // Ended by SIGPIPE, as `ls | head` is, or exit 0; never 101 (a panic).
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert!(
                status.signal() == Some(libc_sigpipe()) || status.code() == Some(0),
                "weft {args:?}: {status}"
            );
        }
        #[cfg(not(unix))]
        assert_ne!(status.code(), Some(101), "weft {args:?}: {status}");
    }
}

/// SIGPIPE's number (13 on every Unix weft runs on), without a libc dependency.
#[cfg(unix)]
fn libc_sigpipe() -> i32 {
    13
}
