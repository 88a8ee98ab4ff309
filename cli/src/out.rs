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

/// Writes `args` to stdout, terminal control characters escaped ([`printable`]).
pub fn write(args: fmt::Arguments) -> Result<(), CliError> {
    io::stdout()
        .lock()
        .write_all(printable(&args.to_string()).as_bytes())
        .map_err(CliError::Stdout)
}

/// Writes `args` and a newline to stdout, under one lock so the line stays whole.
pub fn line(args: fmt::Arguments) -> Result<(), CliError> {
    let mut lock = io::stdout().lock();
    lock.write_all(printable(&args.to_string()).as_bytes())
        .and_then(|()| lock.write_all(b"\n"))
        .map_err(CliError::Stdout)
}

/// `text` with every control character but newline and tab escaped (`\u{1b}`): names
/// read from a model file (a node called `\x1b[2J`) are printed as text, never acted on
/// by the terminal.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let keep = |c: char| !c.is_control() || c == '\n' || c == '\t';
    if text.chars().all(keep) {
        return text.into();
    }
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if keep(c) {
                vec![c]
            } else {
                c.escape_default().collect()
            };
            escaped
        })
        .collect::<String>()
        .into()
}

/// Whether stdout was open when weft started. A closed stdout (`weft ... >&-`) is no
/// error to the standard library: before `main` it opens `/dev/null` read-write on the
/// closed descriptor, and every line would be lost with exit 0. A shell's `>/dev/null`
/// opens it write-only, so `/dev/null` open read-write on descriptor 1 is taken for a
/// stdout that was closed.
pub fn stdout_is_open() -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: fstat and stat fill the zeroed structs given; fcntl(F_GETFL) only reads
    // the descriptor's flags.
    unsafe {
        let (mut out, mut null): (libc::stat, libc::stat) =
            (std::mem::zeroed(), std::mem::zeroed());
        if libc::fstat(1, &mut out) != 0 {
            return false;
        }
        let is_null = libc::stat(c"/dev/null".as_ptr(), &mut null) == 0
            && (out.st_mode & libc::S_IFMT) == libc::S_IFCHR
            && out.st_rdev == null.st_rdev;
        let read_write = libc::fcntl(1, libc::F_GETFL) & libc::O_ACCMODE == libc::O_RDWR;
        !(is_null && read_write)
    }
    #[cfg(not(target_os = "linux"))]
    true
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
