//! The tuning loop: build, compile, check and time every config of a space.

use std::time::{Duration, Instant};

use rayon::prelude::*;
use thiserror::Error;
use weft_codegen_common::TargetLimits;
use weft_ir::kernel::LoweredFunc;
use weft_kernels::Config;
use weft_ops::Workload;
use weft_ops::check::Checker;
use weft_ops::templates::TemplateSpec;
use weft_runtime::{Bound, Device, DeviceError, KernelId, Timing};

use crate::measure::{Checked, Staged};

/// How to tune.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// Time at most this many configs, spread evenly over the space and always including
    /// the default (`None`: the whole space). Meant for slow devices: the interpreter, a
    /// CPU Vulkan driver.
    pub sample: Option<usize>,
    /// Configs timed besides the space's, whatever the sample (`weft sweep`'s fixed
    /// configs); `sample: Some(0)` times only these and the rule's config.
    pub extra: Vec<Config>,
    /// Seed of the random inputs.
    pub seed: u64,
    /// About how much device time to spend timing one config (at least two runs).
    pub budget: Duration,
    /// Check every config against the float64 reference, whatever the output's size. By
    /// default every config is checked when the output is small
    /// ([`CHECK_ALL_ELEMENTS`]), else the fastest ones until [`CHECKED_FASTEST`] are right:
    /// no config is recorded unchecked either way.
    pub check_all: bool,
    /// Keep only the space's configs with these parameter values (`bk=16`): a sub-space,
    /// such as the tiles a rule chooses among. The kept configs (the rule's, `extra`)
    /// are timed whatever their values.
    pub only: Vec<(String, i64)>,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            sample: None,
            extra: Vec::new(),
            seed: 0,
            budget: Duration::from_millis(20),
            check_all: false,
            only: Vec::new(),
        }
    }
}

/// Outputs up to this many elements are checked for every config.
pub const CHECK_ALL_ELEMENTS: i64 = 1 << 20;

/// Above [`CHECK_ALL_ELEMENTS`], the fastest configs are checked until this many are right.
pub const CHECKED_FASTEST: usize = 5;

/// Told how tuning advances (a progress bar). Every method may be called from several
/// threads at once.
pub trait Progress: Sync {
    /// A new phase (`building`, `compiling`, `timing`) of `total` steps begins.
    fn phase(&self, _name: &'static str, _total: usize) {}
    /// One step of the current phase is done.
    fn step(&self) {}
    /// A config was timed at `median` kernel time (before its check), for a report of the
    /// best time so far.
    fn timed(&self, _median: Duration) {}
}

/// No progress reports.
impl Progress for () {}

/// What one config did.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Ran, with its kernel time; `error` is its error against the float64 reference as
    /// a fraction of the tolerance ([`weft_ops::check`]: at most 1 is right) where it was
    /// checked (`None`: a large output, and slower than the checked ones).
    Timed { timing: Timing, error: Option<f64> },
    /// Ran, but its output is wrong (a bug: every config must be right); `error` as
    /// above, above 1.
    Wrong { error: f64 },
    /// Could not be built, compiled or run (why).
    Failed(String),
}

/// One config of the space and what it did.
#[derive(Clone, Debug)]
pub struct Trial {
    pub config: Config,
    /// The template's one-line description of the config.
    pub summary: String,
    pub outcome: Outcome,
}

impl Trial {
    /// The median kernel time, for a right config.
    pub fn time(&self) -> Option<Duration> {
        match &self.outcome {
            Outcome::Timed { timing, .. } => Some(timing.median),
            _ => None,
        }
    }
}

/// The result of tuning one workload on one device.
#[derive(Clone, Debug)]
pub struct Tuned {
    /// Configs of the space for the target's resources that can pay at the shape, with
    /// the rule's pick.
    pub space: usize,
    /// Every config tried, fastest right one first, then the wrong and failed ones.
    pub trials: Vec<Trial>,
    /// How many configs were checked against the reference.
    pub checked: usize,
    /// Wall-clock time of the whole tuning.
    pub elapsed: Duration,
    /// Of which building, lowering and compiling every config.
    pub compile_time: Duration,
}

impl Tuned {
    /// The fastest config checked right.
    pub fn best(&self) -> Option<&Trial> {
        self.trials
            .first()
            .filter(|t| matches!(t.outcome, Outcome::Timed { error: Some(_), .. }))
    }

    /// Configs that ran but gave a wrong result.
    pub fn wrong(&self) -> impl Iterator<Item = &Trial> {
        self.trials
            .iter()
            .filter(|t| matches!(t.outcome, Outcome::Wrong { .. }))
    }
}

/// Why tuning could not run at all (one config failing is an [`Outcome`], not this).
#[derive(Debug, Error)]
pub enum TuneError {
    #[error(
        "template `{template}` has no config that fits {target} ({threads} threads, {shared} B shared memory, {registers} registers per thread)"
    )]
    EmptySpace {
        template: String,
        target: String,
        threads: u64,
        shared: u64,
        registers: u64,
    },
    #[error("preparing the inputs on the device: {0}")]
    Device(#[from] DeviceError),
}

/// `configs` thinned to `n` evenly spread, with each of `keep` (the config that runs
/// without a record, a sweep's fixed ones) added where the spread missed it.
fn sample(configs: Vec<Config>, n: Option<usize>, keep: &[&Config]) -> Vec<Config> {
    let Some(n) = n.filter(|&n| n < configs.len()) else {
        return configs;
    };
    let stride = configs.len() as f64 / n.max(1) as f64;
    let mut out: Vec<Config> = (0..n)
        .map(|i| configs[(i as f64 * stride) as usize].clone())
        .collect();
    for k in keep {
        if !out.contains(k) && configs.contains(k) {
            out.push((*k).clone());
        }
    }
    out
}

/// Tunes the template `spec` of `w` on `device`, which offers a block `limits`:
/// every config of the space (or a sample, [`TuneOptions::sample`]) is built and lowered
/// on every core, compiled with [`Device::compile_many`], run once on seeded random
/// inputs with a poisoned output and checked against the float64 reference, then timed
/// with [`Device::time_launches`] for about [`TuneOptions::budget`] of device time.
pub fn tune(
    device: &mut dyn Device,
    w: &Workload,
    spec: &TemplateSpec,
    limits: &TargetLimits,
    opts: &TuneOptions,
    progress: &dyn Progress,
) -> Result<Tuned, TuneError> {
    let started = Instant::now();
    let space = (spec.space)(limits);
    if space.is_empty() {
        return Err(TuneError::EmptySpace {
            template: format!("{}/{}", w.op.name, spec.schedule),
            target: limits.name.clone(),
            threads: limits.max_threads_per_block,
            shared: limits.max_shared_bytes,
            registers: limits.max_registers,
        });
    }
    // Only the configs that can pay at this shape (a split-K config over many tiles or
    // a short reduction cannot), and always what runs without a record: the rule's
    // config for this shape, which may split in a number of parts the space does not
    // list.
    let mut space: Vec<Config> = space
        .into_iter()
        .filter(|c| (spec.pays)(limits, &w.shape, c))
        .filter(|c| opts.only.iter().all(|(n, v)| c.get(n) == Some(*v)))
        .collect();
    let untuned = spec.untuned(limits, &w.shape).0;
    let keep: Vec<&Config> = std::iter::once(&untuned).chain(&opts.extra).collect();
    for c in &keep {
        if !space.contains(c) {
            space.push((*c).clone());
        }
    }
    let space_len = space.len();
    let configs = sample(space, opts.sample, &keep);

    progress.phase("building", configs.len());
    let lowered: Vec<Result<LoweredFunc, String>> = configs
        .par_iter()
        .map(|c| {
            let r = w
                .lower_with(spec.schedule, Some(c))
                .map_err(|e| e.to_string());
            progress.step();
            r
        })
        .collect();
    let kernels: Vec<&weft_ir::kernel::Kernel> =
        lowered.iter().flatten().flat_map(|l| &l.kernels).collect();
    progress.phase("compiling", 1);
    let mut ids = device.compile_many(&kernels).into_iter();
    progress.step();
    let compile_time = started.elapsed();

    let inputs = w.random_inputs(opts.seed);
    let checker = Checker::new(w, &inputs);
    // Every config has the workload's parameters: they are staged once, for all.
    let Some(first) = lowered.iter().flatten().next() else {
        return Ok(all_failed(
            spec,
            configs,
            lowered,
            space_len,
            started,
            compile_time,
        ));
    };
    let staged = Staged::new(device, w, first, &inputs)?;

    // Time every config (each run once first: a launch that fails is caught here).
    progress.phase("timing", configs.len());
    let mut runs: Vec<Option<Bound>> = Vec::with_capacity(configs.len());
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(configs.len());
    let mut best: Option<Duration> = None;
    for lowered in lowered {
        let prepared = lowered.and_then(|l| {
            let compiled: Vec<Result<KernelId, DeviceError>> =
                ids.by_ref().take(l.kernels.len()).collect();
            let ids = compiled
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            Bound::with_kernels(device, &l, staged.params(), &ids).map_err(|e| e.to_string())
        });
        let (run, outcome) = match prepared {
            Err(e) => (None, Outcome::Failed(e)),
            Ok(r) => match time(device, &r, opts, best) {
                Ok(timing) => {
                    progress.timed(timing.median);
                    best = Some(best.map_or(timing.median, |b| b.min(timing.median)));
                    let o = Outcome::Timed {
                        timing,
                        error: None,
                    };
                    (Some(r), o)
                }
                Err(e) => {
                    r.free(device);
                    (None, Outcome::Failed(e.to_string()))
                }
            },
        };
        runs.push(run);
        outcomes.push(outcome);
        progress.step();
    }

    // Check against the reference: every config, or the fastest until enough are right.
    let check_all = opts.check_all || w.output.numel() <= CHECK_ALL_ELEMENTS;
    let mut order: Vec<usize> = (0..outcomes.len())
        .filter(|&i| matches!(outcomes[i], Outcome::Timed { .. }))
        .collect();
    order.sort_by_key(|&i| match &outcomes[i] {
        Outcome::Timed { timing, .. } => timing.median,
        _ => Duration::MAX,
    });
    let to_check = if check_all {
        order.len()
    } else {
        CHECKED_FASTEST
    };
    progress.phase("checking", to_check.min(order.len()));
    let (mut right, mut checked) = (0, 0);
    for i in order {
        if right >= to_check {
            break;
        }
        let Some(r) = &runs[i] else { continue };
        checked += 1;
        let error = staged
            .run(device, w, r)
            .map(|out| Checked::of(out, &checker).error);
        outcomes[i] = match (
            error,
            std::mem::replace(&mut outcomes[i], Outcome::Failed(String::new())),
        ) {
            (Err(e), _) => Outcome::Failed(e.to_string()),
            (Ok(e), _) if !e.is_right() => Outcome::Wrong { error: e.ratio },
            (Ok(e), Outcome::Timed { timing, .. }) => {
                right += 1;
                Outcome::Timed {
                    timing,
                    error: Some(e.ratio),
                }
            }
            (Ok(_), other) => other,
        };
        progress.step();
    }
    for r in runs.into_iter().flatten() {
        r.free(device);
    }
    staged.free(device);

    let mut trials: Vec<Trial> = configs
        .into_iter()
        .zip(outcomes)
        .map(|(config, outcome)| Trial {
            summary: (spec.describe)(&config).unwrap_or_default(),
            config,
            outcome,
        })
        .collect();
    // Checked right configs by time, then unchecked ones by time, then wrong, then failed.
    trials.sort_by_key(|t| match &t.outcome {
        Outcome::Timed {
            timing,
            error: Some(_),
        } => (0, timing.median),
        Outcome::Timed { timing, .. } => (1, timing.median),
        Outcome::Wrong { .. } => (2, Duration::ZERO),
        Outcome::Failed(_) => (3, Duration::ZERO),
    });
    Ok(Tuned {
        space: space_len,
        trials,
        checked,
        elapsed: started.elapsed(),
        compile_time,
    })
}

/// The shortest host round trip of one run that can show a config slow (see [`time`]).
const SLOW_FLOOR: Duration = Duration::from_millis(1);

/// Runs `r` once (a failing launch is an error here), then times it for about the
/// budget; a config far slower than `best` (and longer than [`SLOW_FLOOR`]) gets two
/// runs, the first config timed ([`weft_runtime::WARM_UP`]) a warm-up.
fn time(
    device: &mut dyn Device,
    r: &Bound,
    opts: &TuneOptions,
    best: Option<Duration>,
) -> Result<Timing, DeviceError> {
    let started = Instant::now();
    for launch in &r.launches {
        device.launch(launch.kernel, &launch.args)?;
    }
    device.synchronize()?;
    let first = started.elapsed();
    // A config whose one run (as the host sees it: launch, run, wait) took three times the
    // best kernel time so far is timed only twice. The host's round trip holds tens of
    // microseconds of launch and wait, so only a run long enough for that to be noise can
    // say a config is slow: below [`SLOW_FLOOR`] every config is timed in full. (Without
    // the floor every small kernel after the first was "slow": two samples of one run
    // each, which time a 2 µs kernel as 4-12 µs; the tuner then ranked the config it
    // timed first above all others. `docs/timing.md`.)
    let slow = best.is_some_and(|b| first > b * 3 && first > SLOW_FLOOR);
    let per = first.as_secs_f64().max(1e-6);
    let iters = if slow {
        2
    } else {
        ((opts.budget.as_secs_f64() / per) as usize).clamp(2, 100)
    };
    // The configs are timed back to back, but the GPU sat idle while the host compiled
    // them: the first one timed warms it up (`WARM_UP`), the others need not.
    let warmup = usize::from(best.is_none());
    device.time_launches(&r.launches, warmup, iters)
}

/// The result of a tuning in which no config could be built.
fn all_failed(
    spec: &TemplateSpec,
    configs: Vec<Config>,
    lowered: Vec<Result<LoweredFunc, String>>,
    space: usize,
    started: Instant,
    compile_time: Duration,
) -> Tuned {
    let trials = configs
        .into_iter()
        .zip(lowered)
        .map(|(config, l)| Trial {
            summary: (spec.describe)(&config).unwrap_or_default(),
            config,
            outcome: Outcome::Failed(l.err().unwrap_or_default()),
        })
        .collect();
    Tuned {
        space,
        trials,
        checked: 0,
        elapsed: started.elapsed(),
        compile_time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_spread_over_the_space_and_keep_the_default() {
        let configs: Vec<Config> = (0..10).map(|i| Config(vec![("a".into(), i)])).collect();
        let keep = Config(vec![("a".into(), 7)]);
        let s = sample(configs.clone(), Some(3), &[&keep]);
        assert_eq!(s.len(), 4);
        assert!(s.contains(&keep));
        // A kept config the spread already has is not added twice.
        assert_eq!(sample(configs.clone(), Some(5), &[&configs[0]]).len(), 5);
        // None of the space: only what is kept.
        assert_eq!(
            sample(configs.clone(), Some(0), &[&keep]),
            vec![keep.clone()]
        );
        assert_eq!(sample(configs.clone(), None, &[&keep]).len(), 10);
        assert_eq!(sample(configs, Some(50), &[&keep]).len(), 10);
    }
}
