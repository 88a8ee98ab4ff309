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

/// How long one batch of [`settle`] lasts: long enough that submitting and waiting are
/// noise, short enough that a GPU whose clocks are already up loses little time to it.
pub const SETTLE_BATCH: Duration = Duration::from_millis(20);

/// The least [`settle`] runs: NVIDIA's driver raises low clocks 100–400 ms into a
/// continuous load, so two batches of a shorter settling can agree at the low clock.
/// With 200 ms, BERT-base at 512 tokens, its pipelines compiled afresh, was timed at
/// 5.4–5.7 ms in two processes of five against 2.2 ms in the others, the SM clock
/// sampled at 345–645 MHz as its timing began (2026-11-27,
/// `measurements/h100-2026-11-27b/slow-512*`).
pub const SETTLE_MIN: Duration = Duration::from_millis(500);

/// How much slower the first quarter of a timing's samples may be than its last before
/// the timing counts as taken while the clocks were still rising ([`rising`]).
pub const RISING: f64 = 1.2;

/// Whether `samples` (in the order they ran) were taken while the clocks were still
/// rising: the median of the first quarter is more than [`RISING`] times the last
/// quarter's. Only with 8 samples or more; a timing this says so of is taken again.
pub(crate) fn rising(samples: &[Duration]) -> bool {
    if samples.len() < 8 {
        return false;
    }
    let quarter = samples.len() / 4;
    let median = |part: &[Duration]| {
        let mut v = part.to_vec();
        v.sort();
        v[v.len() / 2].as_secs_f64()
    };
    let (first, last) = (
        median(&samples[..quarter]),
        median(&samples[samples.len() - quarter..]),
    );
    first > RISING * last
}

/// The longest [`settle`] runs before timing anyway.
pub const SETTLE_MAX: Duration = Duration::from_secs(2);

/// A batch no more than this much faster per run than the batch before it has settled.
const SETTLED_GAIN: f64 = 0.02;

/// Keeps a GPU busy until its clocks have settled: batches of about [`SETTLE_BATCH`],
/// each timed by `batch(n)` (it runs `n` runs, waits, and returns how long that took),
/// for at least [`SETTLE_MIN`] and then until a batch is no faster per run than the one
/// before it (by [`SETTLED_GAIN`]), or [`SETTLE_MAX`] has passed.
///
/// Why: NVIDIA's Vulkan driver lowers the clocks of a process whose GPU work comes in
/// short bursts — a model or a tuner compiling pipelines for seconds between timings —
/// step by step down to the idle clock (345 MHz on an H100, against 1980 under load),
/// and the [`WARM_UP`] that follows does not bring them back: every run of a timing
/// then took up to 4.6× its time at full clocks (docs/vulkan.md). Under continuous load
/// the driver raises them again within about 100 ms.
pub(crate) fn settle<E>(
    max_batch: usize,
    mut batch: impl FnMut(usize) -> Result<Duration, E>,
) -> Result<(), E> {
    let mut spent = Duration::ZERO;
    let mut n = 1;
    let mut before: Option<f64> = None;
    // A bound on batches too, should a clock (a test's) never add up to SETTLE_MAX.
    for _ in 0..10_000 {
        if spent >= SETTLE_MAX {
            break;
        }
        let took = batch(n)?;
        spent += took;
        let per = took.as_secs_f64() / n as f64;
        if spent >= SETTLE_MIN && before.is_some_and(|b| per >= b * (1.0 - SETTLED_GAIN)) {
            break;
        }
        before = Some(per);
        n = ((SETTLE_BATCH.as_secs_f64() / per.max(1e-9)) as usize).clamp(1, max_batch);
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

    /// The batch sizes [`settle`] asks for on a GPU whose time per run is `per(k)` in its
    /// `k`-th batch.
    fn settling(per: impl Fn(usize) -> f64) -> Vec<usize> {
        let mut seen = Vec::new();
        settle::<()>(1000, |n| {
            let t = per(seen.len()) * n as f64;
            seen.push(n);
            Ok(Duration::from_secs_f64(t))
        })
        .unwrap();
        seen
    }

    #[test]
    fn settling_runs_until_the_clocks_stop_rising() {
        let spent = |seen: &[usize], per: &dyn Fn(usize) -> f64| -> f64 {
            seen.iter()
                .enumerate()
                .map(|(k, &n)| per(k) * n as f64)
                .sum()
        };
        // Clocks already up: the first batch calibrates, then batches of 20 ms until
        // SETTLE_MIN has passed.
        let flat = |_| 1e-4;
        let steady = settling(flat);
        assert_eq!(steady[..2], [1, 200], "{steady:?}");
        let s = spent(&steady, &flat);
        assert!(s >= SETTLE_MIN.as_secs_f64() && s < SETTLE_MIN.as_secs_f64() + 0.025);
        // Clocks low for the first 100 ms (its first six batches), then up, as the
        // driver raises them: it runs until two batches agree at the high clock.
        let ramp = |k: usize| if k < 6 { 4e-4 } else { 1e-4 };
        let seen = settling(ramp);
        assert!(seen.len() >= 8, "{seen:?}");
        assert_eq!(ramp(seen.len() - 2), 1e-4, "{seen:?}");
        assert!(spent(&seen, &ramp) >= SETTLE_MIN.as_secs_f64(), "{seen:?}");
        // Never settling (3% faster every batch): it gives up after SETTLE_MAX.
        let per = |k: usize| 1e-3 * 0.97f64.powi(k as i32);
        let seen = settling(per);
        let s = spent(&seen, &per);
        assert!(s >= SETTLE_MAX.as_secs_f64(), "{seen:?}");
        assert!(s < SETTLE_MAX.as_secs_f64() + 0.1, "{seen:?}");
    }

    #[test]
    fn a_timing_whose_first_quarter_is_slow_was_taken_while_the_clocks_rose() {
        let us = |v: &[u64]| {
            v.iter()
                .map(|&t| Duration::from_micros(t))
                .collect::<Vec<_>>()
        };
        // BERT-base at 512 tokens as one timing saw it: 5.7 ms runs, then 2.2 ms ones.
        let ramp = us(&[
            5700, 5740, 5720, 5650, 4100, 2210, 2200, 2205, 2201, 2199, 2202, 2203,
        ]);
        assert!(rising(&ramp));
        // Noise, one slow outlier, a slow end, or too few samples: no.
        let steady = us(&[2200, 2210, 2190, 2205, 2400, 2200, 2201, 2199]);
        assert!(!rising(&steady));
        let falling = us(&[2200, 2200, 2200, 2200, 5700, 5700, 5700, 5700]);
        assert!(!rising(&falling));
        assert!(!rising(&ramp[..6]));
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
