//! Progress of the long commands (`tune`, `bench`, `report`) on stderr.
//!
//! On a terminal: an indicatif bar, redrawn in place. Anywhere else (a log file, CI)
//! indicatif draws nothing, and a run of minutes would look hung; there, plain lines
//! instead: one when a phase starts, then at most one every [`PLAIN_INTERVAL`] (or
//! `WEFT_PROGRESS_INTERVAL` seconds), such as
//! `weft: tune matmul: timing 12/40 configs, best 1.23 ms`.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::format::fmt_time;

/// Least time between two plain progress lines.
const PLAIN_INTERVAL: Duration = Duration::from_secs(10);

/// A progress report: a bar on a terminal, plain lines elsewhere.
pub struct Progress {
    bar: ProgressBar,
    /// `None` on a terminal.
    plain: Option<Mutex<Plain>>,
}

/// What the plain lines say, and when the last one was written.
struct Plain {
    /// What is in progress: `tune matmul`, `bench`.
    label: String,
    /// What a step counts: `configs`, `runs`.
    unit: &'static str,
    interval: Duration,
    phase: Option<&'static str>,
    pos: u64,
    len: u64,
    message: String,
    best: Option<Duration>,
    last: Instant,
    /// The step count of the last line written, `None` before the first: the end writes
    /// the final count only where a line was written and the count moved since.
    written: Option<u64>,
}

impl Progress {
    /// A report of `len` steps counted in `unit`, labelled `label` in plain lines; on a
    /// terminal, a bar drawn with indicatif's `template`.
    pub fn new(label: impl Into<String>, unit: &'static str, template: &str, len: u64) -> Progress {
        let bar = ProgressBar::new(len);
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        let plain = (!std::io::stderr().is_terminal()).then(|| {
            Mutex::new(Plain {
                label: label.into(),
                unit,
                interval: interval(),
                phase: None,
                pos: 0,
                len,
                message: String::new(),
                best: None,
                last: Instant::now(),
                written: None,
            })
        });
        Progress { bar, plain }
    }

    /// A new phase (`building`, `timing`) of `len` steps: its first line is written at
    /// once.
    pub fn phase(&self, name: &'static str, len: u64) {
        self.bar.set_message(name);
        self.bar.set_length(len);
        self.bar.set_position(0);
        self.with_plain(|p| {
            p.phase = Some(name);
            p.pos = 0;
            p.len = len;
            p.write();
        });
    }

    /// What the next steps are about (`vecadd/grid-stride n=1000 on cpu`).
    pub fn message(&self, message: String) {
        self.with_plain(|p| p.message.clone_from(&message));
        self.bar.set_message(message);
    }

    /// One step done.
    pub fn inc(&self, steps: u64) {
        self.bar.inc(steps);
        self.with_plain(|p| {
            p.pos += steps;
            if p.last.elapsed() >= p.interval {
                p.write();
            }
        });
    }

    /// A time measured: plain lines report the best so far.
    pub fn timed(&self, median: Duration) {
        self.with_plain(|p| p.best = Some(p.best.map_or(median, |b| b.min(median))));
    }

    /// Clears the bar; plain lines end with the final count, if any line was written.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
        self.with_plain(|p| {
            if p.written.is_some_and(|n| n != p.pos) {
                p.write();
            }
        });
    }

    fn with_plain(&self, f: impl FnOnce(&mut Plain)) {
        if let Some(p) = &self.plain {
            // A panic elsewhere while the lock was held leaves a report still usable.
            let mut p = p.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut p);
        }
    }
}

impl Plain {
    fn write(&mut self) {
        let mut line = format!("weft: {}: ", self.label);
        if let Some(phase) = self.phase {
            line.push_str(phase);
        }
        // A phase of one step (compiling every config at once) has no count to report.
        if self.len > 1 || self.phase.is_none() {
            let space = if self.phase.is_some() { " " } else { "" };
            line.push_str(&format!("{space}{}/{} {}", self.pos, self.len, self.unit));
        } else if self.pos >= self.len {
            line.push_str(" done");
        }
        if let Some(best) = self.best {
            line.push_str(&format!(", best {}", fmt_time(best)));
        }
        if !self.message.is_empty() {
            line.push_str(&format!(" ({})", self.message));
        }
        // A log that cannot be written loses its progress lines, nothing more.
        let _ = writeln!(std::io::stderr(), "{line}");
        self.last = Instant::now();
        self.written = Some(self.pos);
    }
}

/// `WEFT_PROGRESS_INTERVAL` (seconds; 0 writes every step), else [`PLAIN_INTERVAL`].
fn interval() -> Duration {
    std::env::var("WEFT_PROGRESS_INTERVAL")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map_or(PLAIN_INTERVAL, Duration::from_secs_f64)
}

impl weft_tune::Progress for Progress {
    fn phase(&self, name: &'static str, total: usize) {
        Progress::phase(self, name, total as u64);
    }
    fn step(&self) {
        self.inc(1);
    }
    fn timed(&self, median: Duration) {
        Progress::timed(self, median);
    }
}
