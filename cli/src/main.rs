//! `weft`: list targets, print IR and emitted source, run and benchmark workloads.
//!
//! ```text
//! weft targets
//! weft ops
//! weft ir    --op OP [--schedule S] [--shape k=v,...] [--lowered] [--trace]
//! weft emit  --op OP [--schedule S] [--shape k=v,...] --target T
//! weft compile --op OP [--schedule S] [--shape k=v,...] --target rocm[ -arch=gfxNNN] [--all]
//! weft run   --op OP [--schedule S] [--shape k=v,...] --target T [--iters N] [--all]
//!            [--save DIR] [--inputs DIR]
//! weft bench [--targets a,b,...] [--ops ...] [--json FILE] [--size small|bench]
//! ```
//!
//! Exit status: 0 when right; 1 on a wrong result, a kernel that failed on its device, or
//! a stdout that cannot be written; 2 on bad input, an unavailable target, or a kernel
//! the target refuses. Errors go to stderr as `weft: MESSAGE`. A closed stdout pipe
//! (`weft ops | head -1`) ends the command quietly.

mod args;
mod bench;
mod charts;
mod check;
mod checkpoint;
mod commands;
mod error;
mod format;
mod kernel_table;
mod model_args;
mod model_compile;
mod models;
mod npy;
mod offline;
mod ort;
mod out;
mod paths;
mod progress;
mod references;
mod report;
mod select;
mod sweep;
mod tokenizer;

use std::io::Write;
use std::process::ExitCode;

/// The commit this binary was built from (see `build.rs`).
pub const COMMIT: &str = env!("WEFT_COMMIT");

use clap::Parser;

fn main() -> ExitCode {
    quiet_mesa();
    die_quietly_on_closed_pipes();
    let cli = args::Cli::parse();
    if !out::stdout_is_open() {
        let _ = writeln!(
            std::io::stderr(),
            "weft: stdout is closed: nothing could be written"
        );
        return ExitCode::from(error::EXIT_WRONG);
    }
    match commands::dispatch(&cli.command).and_then(|()| out::flush()) {
        Ok(()) => ExitCode::from(error::EXIT_OK),
        // The reader is gone: it reads no message either, and stopping early is what it
        // asked for. (On Unix SIGPIPE ends the process before this; see below.)
        Err(e) if out::is_closed_pipe(&e) => ExitCode::from(error::EXIT_OK),
        Err(e) => {
            // `eprintln!` would panic on a stderr that cannot be written either.
            let _ = writeln!(
                std::io::stderr(),
                "weft: {}",
                out::printable(&e.to_string())
            );
            ExitCode::from(e.exit_code())
        }
    }
}

/// Mesa's drivers print "XDG_RUNTIME_DIR is invalid" on every adapter probe when the
/// variable is unset (CI, containers, ssh sessions); a temporary folder silences them.
fn quiet_mesa() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
        // SAFETY: the first statement of `main`, before any other thread exists, so no
        // concurrent read of the environment can race with this write.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", std::env::temp_dir()) };
    }
}

/// `weft tune --list | head` closes stdout early: end quietly, as `ls | head` does,
/// instead of panicking on the failed write (Rust ignores SIGPIPE by default).
fn die_quietly_on_closed_pipes() {
    #[cfg(unix)]
    // SAFETY: restores the default disposition of one signal at the start of `main`,
    // before any thread exists; no handler is installed.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
