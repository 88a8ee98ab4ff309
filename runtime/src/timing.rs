//! Device-side timing: [`Timing`] (the samples of repeated runs and what the host saw)
//! and the warm-up every GPU timing runs first ([`warm_up`], [`WARM_UP`]).

use std::time::Duration;

/// How long a GPU's warm-up lasts at least, when a timing asks for one: a GPU that sat
/// idle (while the host computed a float64 reference, say) runs at its idle clocks, and
/// a few runs of a short kernel end before the clocks are back up — they would time the
/// ramp, not the kernel. 25 ms, as Triton's `do_bench` warms up. CPU devices (the
/// interpreter, a CPU Vulkan driver) have no clocks to ramp and take `warmup` runs only.
pub const WARM_UP: Duration = Duration::from_millis(25);

/// Warms a device up: `batch(n)` runs `n` runs and waits for them; first `warmup` runs,
/// then twice as many each round (at most `max_batch`) until [`WARM_UP`] has passed, or
/// only the first round where `clocks` is false (a CPU device). Nothing with `warmup = 0`.
pub(crate) fn warm_up<E>(
    warmup: usize,
    clocks: bool,
    max_batch: usize,
    batch: impl FnMut(usize) -> Result<(), E>,
) -> Result<(), E> {
    let started = std::time::Instant::now();
    warm_up_by(warmup, clocks, max_batch, || started.elapsed(), batch)
}

/// [`warm_up`] with the time since it started read from `elapsed` (a test's own clock).
fn warm_up_by<E>(
    warmup: usize,
    clocks: bool,
    max_batch: usize,
    elapsed: impl Fn() -> Duration,
    mut batch: impl FnMut(usize) -> Result<(), E>,
) -> Result<(), E> {
    let mut n = warmup;
    while n > 0 {
        batch(n)?;
        n = if clocks && elapsed() < WARM_UP {
            (2 * n).min(max_batch)
        } else {
            0
        };
    }
    Ok(())
}

/// Device-side times of repeated runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// The median of [`Timing::all`] (the mean of the middle two for an even count).
    pub median: Duration,
    /// The fastest sample.
    pub min: Duration,
    /// Every sample, in order: the time of one run (on CUDA, the mean of a group of
    /// back-to-back runs).
    pub all: Vec<Duration>,
    /// What the host sees for one run: the wall-clock time from launching its kernels to
    /// their results being waited for (the median of a few runs). The difference to
    /// [`Timing::median`] is the host's launch and wait overhead, which kernel time leaves
    /// out. `None` where it was not measured.
    pub host: Option<Duration>,
}

impl Timing {
    /// Summarises samples; `None` when there are none.
    pub fn from_samples(all: Vec<Duration>) -> Option<Timing> {
        let mut sorted = all.clone();
        sorted.sort();
        let min = *sorted.first()?;
        let mid = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            (sorted[mid - 1] + sorted[mid]) / 2
        };
        Some(Timing {
            median,
            min,
            all,
            host: None,
        })
    }

    /// The same timing with the host's round trip per run: the median of `samples`.
    pub fn with_host(mut self, samples: Vec<Duration>) -> Timing {
        self.host = Timing::from_samples(samples).map(|h| h.median);
        self
    }

    /// The host's launch and wait overhead per run: [`Timing::host`] less the kernel
    /// time (zero when the kernels take longer than the host's measurement resolution).
    pub fn launch_overhead(&self) -> Option<Duration> {
        self.host.map(|h| h.saturating_sub(self.median))
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// Batches the warm-up ran, each run standing in for 1 ms of device time on a clock
    /// of the test's own (a loaded machine's scheduler cannot stretch it).
    fn batches(warmup: usize, clocks: bool) -> Vec<usize> {
        let mut seen = Vec::new();
        let now = Cell::new(Duration::ZERO);
        warm_up_by::<()>(
            warmup,
            clocks,
            8,
            || now.get(),
            |n| {
                seen.push(n);
                now.set(now.get() + Duration::from_millis(n as u64));
                Ok(())
            },
        )
        .unwrap();
        seen
    }

    #[test]
    fn a_warm_up_doubles_until_it_has_lasted_long_enough() {
        let seen = batches(3, true);
        // 3 + 6 + 8 + 8 = 25 ms: the batch doubles up to its cap, then repeats.
        assert_eq!(seen, [3, 6, 8, 8], "{seen:?}");
        assert!(
            seen.iter().sum::<usize>() >= WARM_UP.as_millis() as usize,
            "{seen:?}"
        );
        // A CPU device takes the runs asked for; no warm-up asked for is none.
        assert_eq!(batches(3, false), [3]);
        assert!(batches(0, true).is_empty());
    }

    #[test]
    fn the_real_clock_warms_up_for_at_least_the_warm_up_time() {
        let started = std::time::Instant::now();
        warm_up::<()>(1, true, 4, |n| {
            std::thread::sleep(Duration::from_millis(n as u64));
            Ok(())
        })
        .unwrap();
        assert!(started.elapsed() >= WARM_UP);
    }
}
