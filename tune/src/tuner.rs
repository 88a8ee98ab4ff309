//! The tuning loop: build, compile, check and time every config of a space.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ndarray::ArrayD;
use rayon::prelude::*;
use thiserror::Error;
use weft_ir::data::{Arg, TensorData};
use weft_ir::func::Param;
use weft_ir::kernel::{KernelParam, LoweredFunc};
use weft_ops::Workload;
use weft_ops::check::{Checker, TOLERANCE};
use weft_ops::templates::{Config, Resources, TemplateSpec};
use weft_runtime::{BufferId, Device, DeviceError, KernelArg, KernelId, Launch, Timing};

/// How to tune.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// Time at most this many configs, spread evenly over the space and always including
    /// the default (`None`: the whole space). Meant for slow devices: the interpreter, a
    /// CPU Vulkan driver.
    pub sample: Option<usize>,
    /// Seed of the random inputs.
    pub seed: u64,
    /// About how much device time to spend timing one config (at least two runs).
    pub budget: Duration,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            sample: None,
            seed: 0,
            budget: Duration::from_millis(40),
        }
    }
}

/// Told how tuning advances (a progress bar). Every method may be called from several
/// threads at once.
pub trait Progress: Sync {
    /// A new phase (`building`, `compiling`, `timing`) of `total` steps begins.
    fn phase(&self, _name: &'static str, _total: usize) {}
    /// One step of the current phase is done.
    fn step(&self) {}
}

/// No progress reports.
impl Progress for () {}

/// What one config did.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Right, with its kernel time.
    Timed { timing: Timing, max_error: f64 },
    /// Ran, but its output is wrong (a bug: every config must be right).
    Wrong { max_error: f64 },
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
    /// Configs in the space for the target's resources.
    pub space: usize,
    /// Every config tried, fastest right one first, then the wrong and failed ones.
    pub trials: Vec<Trial>,
    /// Wall-clock time of the whole tuning.
    pub elapsed: Duration,
    /// Of which building, lowering and compiling every config.
    pub compile_time: Duration,
}

impl Tuned {
    /// The fastest right config.
    pub fn best(&self) -> Option<&Trial> {
        self.trials.first().filter(|t| t.time().is_some())
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
        threads: i64,
        shared: i64,
        registers: i64,
    },
    #[error("preparing the inputs on the device: {0}")]
    Device(#[from] DeviceError),
}

/// `configs` thinned to at most `n`, evenly spread, keeping `keep` (the default).
fn sample(configs: Vec<Config>, n: Option<usize>, keep: &Config) -> Vec<Config> {
    let Some(n) = n.filter(|&n| n < configs.len()) else {
        return configs;
    };
    let n = n.max(1);
    let stride = configs.len() as f64 / n as f64;
    let mut out: Vec<Config> = (0..n)
        .map(|i| configs[(i as f64 * stride) as usize].clone())
        .collect();
    if !out.contains(keep) && configs.contains(keep) {
        out[0] = keep.clone();
    }
    out
}

/// Tunes the template `spec` of `w` on `device`, whose block resources are `resources`:
/// every config of the space (or a sample, [`TuneOptions::sample`]) is built and lowered
/// on every core, compiled with [`Device::compile_many`], run once on seeded random
/// inputs with a poisoned output and checked against the float64 reference, then timed
/// with [`Device::time_launches`] for about [`TuneOptions::budget`] of device time.
pub fn tune(
    device: &mut dyn Device,
    w: &Workload,
    spec: &TemplateSpec,
    resources: &Resources,
    opts: &TuneOptions,
    progress: &dyn Progress,
) -> Result<Tuned, TuneError> {
    let started = Instant::now();
    let space = (spec.space)(resources);
    if space.is_empty() {
        return Err(TuneError::EmptySpace {
            template: format!("{}/{}", w.op.name, spec.schedule),
            target: resources.name.clone(),
            threads: resources.max_threads,
            shared: resources.max_shared_bytes,
            registers: resources.max_registers,
        });
    }
    let space_len = space.len();
    let configs = sample(space, opts.sample, &(spec.default)(resources));

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
    let args = w.args(&inputs);
    let staged = Staged::new(device, &args)?;

    progress.phase("timing", configs.len());
    let mut trials = Vec::with_capacity(configs.len());
    let mut best: Option<Duration> = None;
    for (config, lowered) in configs.into_iter().zip(lowered) {
        let summary = (spec.describe)(&config).unwrap_or_default();
        let outcome = match lowered {
            Err(e) => Outcome::Failed(e),
            Ok(l) => {
                let compiled: Vec<Result<KernelId, DeviceError>> =
                    ids.by_ref().take(l.kernels.len()).collect();
                match compiled.into_iter().collect::<Result<Vec<_>, _>>() {
                    Err(e) => Outcome::Failed(e.to_string()),
                    Ok(ids) => staged
                        .trial(device, w, &l, &ids, &checker, opts, best)
                        .unwrap_or_else(|e| Outcome::Failed(e.to_string())),
                }
            }
        };
        if let Outcome::Timed { timing, .. } = &outcome {
            best = Some(best.map_or(timing.median, |b| b.min(timing.median)));
        }
        trials.push(Trial {
            config,
            summary,
            outcome,
        });
        progress.step();
    }
    staged.free(device);
    // Right configs by time, then wrong, then failed.
    trials.sort_by_key(|t| match &t.outcome {
        Outcome::Timed { timing, .. } => (0, timing.median),
        Outcome::Wrong { .. } => (1, Duration::ZERO),
        Outcome::Failed(_) => (2, Duration::ZERO),
    });
    Ok(Tuned {
        space: space_len,
        trials,
        elapsed: started.elapsed(),
        compile_time,
    })
}

/// The workload's parameters allocated once on the device, inputs uploaded; every config
/// runs on these buffers.
struct Staged {
    /// One per parameter (scalars: `None`).
    buffers: Vec<Option<BufferId>>,
    args: Vec<Arg>,
}

impl Staged {
    fn new(device: &mut dyn Device, args: &[Arg]) -> Result<Staged, DeviceError> {
        let mut buffers = Vec::with_capacity(args.len());
        for a in args {
            buffers.push(match a {
                Arg::Tensor(t) => {
                    let id = device.alloc(t.dtype(), t.len())?;
                    device.upload(id, t)?;
                    Some(id)
                }
                Arg::Scalar(_) => None,
            });
        }
        Ok(Staged {
            buffers,
            args: args.to_vec(),
        })
    }

    fn free(&self, device: &mut dyn Device) {
        for id in self.buffers.iter().flatten() {
            let _ = device.free(*id);
        }
    }

    /// Runs, checks and times one config.
    #[allow(clippy::too_many_arguments)]
    fn trial(
        &self,
        device: &mut dyn Device,
        w: &Workload,
        l: &LoweredFunc,
        ids: &[KernelId],
        checker: &Checker,
        opts: &TuneOptions,
        best: Option<Duration>,
    ) -> Result<Outcome, DeviceError> {
        // Temporaries are this config's own.
        let mut temps: HashMap<u64, BufferId> = HashMap::new();
        for t in &l.temps {
            let len = t.numel().max(0) as usize;
            let id = device.alloc(t.dtype(), len)?;
            device.upload(id, &TensorData::poisoned(t.dtype(), len))?;
            temps.insert(t.id(), id);
        }
        let result = self.run_and_time(device, w, l, ids, &temps, checker, opts, best);
        for id in temps.values() {
            let _ = device.free(*id);
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn run_and_time(
        &self,
        device: &mut dyn Device,
        w: &Workload,
        l: &LoweredFunc,
        ids: &[KernelId],
        temps: &HashMap<u64, BufferId>,
        checker: &Checker,
        opts: &TuneOptions,
        best: Option<Duration>,
    ) -> Result<Outcome, DeviceError> {
        let position: HashMap<u64, usize> = l
            .params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Param::Buffer(b) => Some((b.id(), i)),
                Param::Scalar(_) => None,
            })
            .collect();
        let mut launches = Vec::with_capacity(ids.len());
        for (k, &id) in l.kernels.iter().zip(ids) {
            let mut args = Vec::with_capacity(k.params.len());
            for p in &k.params {
                args.push(match p {
                    KernelParam::Buffer { buffer, .. } => {
                        let b = position
                            .get(&buffer.id())
                            .and_then(|&i| self.buffers[i])
                            .or_else(|| temps.get(&buffer.id()).copied());
                        match b {
                            Some(b) => KernelArg::Buffer(b),
                            None => {
                                return Ok(Outcome::Failed(format!(
                                    "kernel `{}` uses `{}`, neither a parameter nor a temporary",
                                    k.name,
                                    buffer.name()
                                )));
                            }
                        }
                    }
                    KernelParam::Scalar(v) => {
                        let i = l.params.iter().position(|p| p == &Param::Scalar(v.clone()));
                        match i.map(|i| &self.args[i]) {
                            Some(Arg::Scalar(s)) => KernelArg::Scalar(*s),
                            _ => {
                                return Ok(Outcome::Failed(format!(
                                    "kernel `{}` uses scalar `{v}`, which is not a parameter",
                                    k.name
                                )));
                            }
                        }
                    }
                });
            }
            launches.push(Launch { kernel: id, args });
        }
        // The output (the last parameter) starts poisoned: an element no thread writes
        // shows up as NaN.
        let out = self.buffers.last().copied().flatten();
        if let (Some(out), Some(Arg::Tensor(t))) = (out, self.args.last()) {
            device.upload(out, &TensorData::poisoned(t.dtype(), t.len()))?;
        }
        let started = Instant::now();
        for launch in &launches {
            device.launch(launch.kernel, &launch.args)?;
        }
        device.synchronize()?;
        let first = started.elapsed();
        let Some(out) = out else {
            return Ok(Outcome::Failed("the workload has no output".into()));
        };
        let data = device.download(out)?;
        let shape: Vec<usize> = w.output.shape().iter().map(|&d| d as usize).collect();
        let values: Vec<f32> = data.to_f64_vec().into_iter().map(|x| x as f32).collect();
        let max_error = match ArrayD::from_shape_vec(shape, values) {
            Ok(o) => checker.max_error(&o),
            Err(_) => f64::INFINITY,
        };
        if max_error > TOLERANCE {
            return Ok(Outcome::Wrong { max_error });
        }
        // A config far slower than the best so far gets two runs, not the full budget.
        let slow = best.is_some_and(|b| first > b * 4);
        let per = first.as_secs_f64().max(1e-6);
        let iters = if slow {
            2
        } else {
            ((opts.budget.as_secs_f64() / per) as usize).clamp(2, 200)
        };
        let timing = device.time_launches(&launches, 1, iters)?;
        Ok(Outcome::Timed { timing, max_error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_spread_over_the_space_and_keep_the_default() {
        let configs: Vec<Config> = (0..10).map(|i| Config(vec![("a".into(), i)])).collect();
        let keep = Config(vec![("a".into(), 7)]);
        let s = sample(configs.clone(), Some(3), &keep);
        assert_eq!(s.len(), 3);
        assert!(s.contains(&keep));
        assert_eq!(sample(configs.clone(), None, &keep).len(), 10);
        assert_eq!(sample(configs, Some(50), &keep).len(), 10);
    }
}
