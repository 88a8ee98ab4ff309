//! Writing results to stdout without panicking.
//!
//! `print!` panics when stdout cannot be written (`weft ops > /dev/full`: exit 101 and a
//! backtrace). Every result line goes through [`out!`] and [`outln!`] instead, which return
//! [`CliError::Stdout`]: `main` prints one line naming the error and exits 1, or exits
//! quietly when the reader went away (a closed pipe).

use std::fmt;
use std::io::{self, Write};

use crate::error::CliError;

/// Writes formatted text to stdout, like `print!`; a failed write is an error, not a panic.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

/// Writes a formatted line to stdout, like `println!`; a failed write is an error, not a
/// panic.
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln};

/// Writes `args` to stdout.
pub fn write(args: fmt::Arguments) -> Result<(), CliError> {
    io::stdout()
        .lock()
        .write_fmt(args)
        .map_err(CliError::Stdout)
}

/// Writes `args` and a newline to stdout, under one lock so the line stays whole.
pub fn line(args: fmt::Arguments) -> Result<(), CliError> {
    let mut lock = io::stdout().lock();
    lock.write_fmt(args)
        .and_then(|()| lock.write_all(b"\n"))
        .map_err(CliError::Stdout)
}

/// Flushes stdout: text still buffered (a last line without a newline) fails here, not
/// silently at exit.
pub fn flush() -> Result<(), CliError> {
    io::stdout().lock().flush().map_err(CliError::Stdout)
}

/// True for an error that means the reader of stdout went away (`weft ops | head -1`):
/// nothing is wrong, and nobody is reading what we would say.
pub fn is_closed_pipe(e: &CliError) -> bool {
    matches!(e, CliError::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe)
}
