//! The one measurement driver: inputs → run → check against the float64 reference →
//! time. `weft run` and `weft bench` measure a schedule with [`measure_on`], the tuner
//! checks and times every config of a space through [`Checked`] runs of the same kind,
//! and the test harness checks every op × schedule with [`run_checked`].
//!
//! A function is put on the device once ([`Params`] for the workload's inputs, [`Bound`]
//! for the schedule: its kernels compiled, its temporaries allocated); a checked run
//! poisons every output and temporary with NaN first, so that an element no thread writes
//! shows up in the comparison; timing replays the same launch list.

use std::time::{Duration, Instant};

use ndarray::ArrayD;
use weft_ir::bounds::{BoundsReport, prove_all};
use weft_ir::data::TensorData;
use weft_ir::kernel::LoweredFunc;
use weft_kernels::Config;
use weft_ops::check::{Checker, Error as CheckError, Rule};
use weft_ops::{OpError, Workload};
use weft_runtime::shader_checks::ChecksDecision;
use weft_runtime::{Bound, Device, DeviceError, KernelId, Params, ShaderChecks, Timing};

/// Why a measurement could not be made (a wrong result is not one: it is measured).
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The schedule could not be built or lowered.
    #[error(transparent)]
    Op(#[from] OpError),
    /// The device failed `what` (`running matmul/template at m=.. on cuda`).
    #[error("{what}: {source}")]
    Device {
        what: String,
        #[source]
        source: DeviceError,
    },
}

impl MeasureError {
    fn device(what: impl Into<String>) -> impl FnOnce(DeviceError) -> MeasureError {
        let what = what.into();
        move |source| MeasureError::Device { what, source }
    }
}

/// How many runs to time.
#[derive(Clone, Copy, Debug)]
pub struct TimingPlan {
    /// Exactly this many timed runs, when given.
    pub iters: Option<usize>,
    /// Without `iters`: at most this many...
    pub max_iters: usize,
    /// ...and about this much device time in all (but at least one run).
    pub budget: Duration,
    /// Untimed runs first, when they fit in a quarter of the budget.
    pub warmup: usize,
}

impl TimingPlan {
    /// Up to 20 runs in about a second, after 3 warm-up runs; or exactly `iters`.
    pub fn new(iters: Option<u32>) -> TimingPlan {
        TimingPlan {
            iters: iters.map(|n| n as usize),
            max_iters: 20,
            budget: Duration::from_secs(1),
            warmup: 3,
        }
    }

    /// (warm-up runs, timed runs) for a kernel sequence that takes `per_run`.
    fn counts(&self, per_run: Duration) -> (usize, usize) {
        let per = per_run.as_secs_f64().max(1e-6);
        let warmup = if per * self.warmup as f64 <= self.budget.as_secs_f64() / 4.0 {
            self.warmup
        } else {
            0
        };
        let iters = self.iters.unwrap_or_else(|| {
            ((self.budget.as_secs_f64() / per) as usize).clamp(1, self.max_iters)
        });
        (warmup, iters)
    }
}

/// What one measurement found.
#[derive(Clone, Debug)]
pub struct Measured {
    /// How far the output is from the float64 reference, by the rule of
    /// [`weft_ops::check`] (infinite for NaN).
    pub error: CheckError,
    /// The rule it was judged by.
    pub rule: Rule,
    pub timing: Timing,
    /// The bounds prover's report per kernel (every target: on CUDA it finds bugs).
    pub bounds: Vec<BoundsReport>,
    /// The device's runtime-check mode (wgpu targets only).
    pub shader_checks: Option<ShaderChecks>,
}

impl Measured {
    /// True when every element is within what the rule allows it.
    pub fn is_right(&self) -> bool {
        self.error.is_right()
    }

    /// True when the prover proved every kernel.
    pub fn is_proven(&self) -> bool {
        self.bounds.iter().all(BoundsReport::is_proven)
    }

    /// How the kernels ran with respect to runtime checks, short: `off (proven)`,
    /// `kept (unproven)`, `on (forced)`, `off (forced)`; `None` off wgpu.
    pub fn checks_short(&self) -> Option<&'static str> {
        Some(match self.shader_checks? {
            ShaderChecks::Checked => "on (forced)",
            ShaderChecks::Unchecked => "off (forced)",
            ShaderChecks::Proven if self.is_proven() => "off (proven)",
            ShaderChecks::Proven => "kept (unproven)",
        })
    }

    /// One line per kernel on why its runtime checks are on or off (wgpu targets).
    pub fn checks_lines(&self) -> Vec<String> {
        let Some(mode) = self.shader_checks else {
            return Vec::new();
        };
        self.bounds
            .iter()
            .map(|r| {
                let d = ChecksDecision::from_report(mode, r.clone());
                format!("{}: {}", r.kernel, d.reason())
            })
            .collect()
    }
}

/// Compiles every kernel of `lowered` on `device` (emitted and checked against the
/// device's limits: a kernel it refuses is a [`DeviceError::Limits`] here, before any
/// work). Compiled code is cached by source, so compiling again later costs nothing.
pub fn compile(
    device: &mut dyn Device,
    lowered: &LoweredFunc,
) -> Result<Vec<KernelId>, DeviceError> {
    let kernels: Vec<&weft_ir::kernel::Kernel> = lowered.kernels.iter().collect();
    device.compile_many(&kernels).into_iter().collect()
}

/// `op/schedule at shape on target`, for messages.
pub fn describe(w: &Workload, schedule: &str, device: &dyn Device) -> String {
    format!(
        "{}/{} at {} on {}",
        w.op.name,
        schedule,
        w.shape,
        device.target()
    )
}

/// A workload's inputs on a device: its parameters uploaded once (the output poisoned),
/// against which any number of its schedules or configs are bound and run.
pub struct Staged {
    params: Params,
}

impl Staged {
    /// Uploads `inputs` (one per input of `w`, in order) and a poisoned output, as the
    /// parameters of `func` (a lowering of `w`: every schedule of it has the same ones).
    pub fn new(
        device: &mut dyn Device,
        w: &Workload,
        func: &LoweredFunc,
        inputs: &[ArrayD<f32>],
    ) -> Result<Staged, DeviceError> {
        Ok(Staged {
            params: Params::upload(device, func, &w.args(inputs))?,
        })
    }

    /// The workload's parameters on the device.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Runs `bound` once with its outputs and temporaries poisoned and downloads the
    /// output (`None` if the device gave back none of the output's shape).
    pub fn run(
        &self,
        device: &mut dyn Device,
        w: &Workload,
        bound: &Bound,
    ) -> Result<Option<ArrayD<f32>>, DeviceError> {
        bound.run_checked(device, &self.params)?;
        let out = w.inputs.len();
        Ok(self
            .params
            .download(device, out)?
            .and_then(|data| output_array(w, data)))
    }

    /// Frees the parameters.
    pub fn free(&self, device: &mut dyn Device) {
        self.params.free(device);
    }
}

/// A checked run: the output and how far it is from the reference.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The output, when the device gave one back.
    pub output: Option<ArrayD<f32>>,
    /// Its error by the rule of [`weft_ops::check`] (infinite for NaN, a missing output
    /// or no reference).
    pub error: CheckError,
}

impl Checked {
    /// Checks `output` with `checker`.
    pub fn of(output: Option<ArrayD<f32>>, checker: &Checker) -> Checked {
        let error = output
            .as_ref()
            .map_or_else(CheckError::infinite, |o| checker.check(o));
        Checked { output, error }
    }
}

/// The output tensor `data` as an array of `w`'s output shape.
fn output_array(w: &Workload, data: TensorData) -> Option<ArrayD<f32>> {
    let shape: Vec<usize> = w.output.shape().iter().map(|&d| d as usize).collect();
    let values: Vec<f32> = match data {
        TensorData::F32(v) => v,
        other => other.to_f64_vec().into_iter().map(|x| x as f32).collect(),
    };
    ArrayD::from_shape_vec(shape, values).ok()
}

/// Runs `lowered` (a lowering of `w`) once on `inputs` with a poisoned output and checks
/// the output against `checker` (the reference of those inputs, computed once for many
/// runs) or a reference computed here. What the test harness checks every case with.
pub fn run_checked(
    device: &mut dyn Device,
    w: &Workload,
    lowered: &LoweredFunc,
    inputs: &[ArrayD<f32>],
    checker: Option<&Checker>,
) -> Result<Checked, DeviceError> {
    // Compiled first: a kernel the target refuses (its limits) is refused before any
    // input is uploaded.
    let kernels = compile(device, lowered)?;
    let staged = Staged::new(device, w, lowered, inputs)?;
    let result =
        Bound::with_kernels(device, lowered, staged.params(), &kernels).and_then(|bound| {
            let out = staged.run(device, w, &bound);
            bound.free(device);
            out
        });
    staged.free(device);
    let output = result?;
    Ok(match checker {
        Some(c) => Checked::of(output, c),
        None => Checked::of(output, &Checker::new(w, inputs)),
    })
}

/// Lowers `schedule` of `w` (a template with `config`), runs it once on random inputs
/// (seeded) with a poisoned output, checks the output, then times it per `plan`.
///
/// A wrong result is not an error here: it comes back in [`Measured::error`], with
/// its timing, so that a benchmark can still show it.
pub fn measure(
    device: &mut dyn Device,
    w: &Workload,
    schedule: &str,
    config: Option<&Config>,
    plan: &TimingPlan,
    seed: u64,
) -> Result<Measured, MeasureError> {
    let inputs = w.random_inputs(seed);
    measure_on(device, w, schedule, config, plan, &inputs, None).map(|(m, _)| m)
}

/// [`measure`] on given inputs (one per input of `w`, in order), checked against
/// `checker` (the reference of those inputs, computed once for many measurements) or a
/// reference computed here; also returns the output of the checked run (`None` if the
/// device gave none back).
pub fn measure_on(
    device: &mut dyn Device,
    w: &Workload,
    schedule: &str,
    config: Option<&Config>,
    plan: &TimingPlan,
    inputs: &[ArrayD<f32>],
    checker: Option<&Checker>,
) -> Result<(Measured, Option<ArrayD<f32>>), MeasureError> {
    let what = describe(w, schedule, device);
    let lowered = w.lower_with(schedule, config)?;
    let started = Instant::now();
    // Compiled first: a kernel the target refuses (its limits) is refused before any
    // input is uploaded.
    let kernels =
        compile(device, &lowered).map_err(MeasureError::device(format!("running {what}")))?;
    let staged = Staged::new(device, w, &lowered, inputs)
        .map_err(MeasureError::device(format!("running {what}")))?;
    let result = measure_staged(device, w, &lowered, &kernels, &staged, plan, started, &what);
    staged.free(device);
    let (timing, output) = result?;
    let checked = match checker {
        Some(c) => Checked::of(output, c),
        None => Checked::of(output, &Checker::new(w, inputs)),
    };
    let measured = Measured {
        error: checked.error,
        rule: w.rule(),
        timing,
        bounds: prove_all(&lowered),
        shader_checks: device.shader_checks(),
    };
    Ok((measured, checked.output))
}

/// Binds `lowered` to the staged inputs, runs it once (checked), then times it.
#[allow(clippy::too_many_arguments)] // one private step of `measure_on`
fn measure_staged(
    device: &mut dyn Device,
    w: &Workload,
    lowered: &LoweredFunc,
    kernels: &[KernelId],
    staged: &Staged,
    plan: &TimingPlan,
    started: Instant,
    what: &str,
) -> Result<(Timing, Option<ArrayD<f32>>), MeasureError> {
    let bound = Bound::with_kernels(device, lowered, staged.params(), kernels)
        .map_err(MeasureError::device(format!("running {what}")))?;
    let result = (|| {
        let output = staged
            .run(device, w, &bound)
            .map_err(MeasureError::device(format!("running {what}")))?;
        let first_run = started.elapsed();
        // The first run's wall-clock time includes compiling and uploading: when even
        // that fits the budget, one timed run measures the kernels alone.
        let per_run = if plan.iters.is_some() {
            first_run
        } else if first_run >= plan.budget {
            plan.budget
        } else {
            device
                .time_launches(&bound.launches, 0, 1)
                .map_err(MeasureError::device(format!("timing {what}")))?
                .median
        };
        let (warmup, iters) = plan.counts(per_run);
        let timing = device
            .time_launches(&bound.launches, warmup, iters)
            .map_err(MeasureError::device(format!("timing {what}")))?;
        Ok((timing, output))
    })();
    bound.free(device);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_the_budget() {
        let plan = TimingPlan::new(None);
        assert_eq!(plan.counts(Duration::from_micros(10)), (3, 20));
        assert_eq!(plan.counts(Duration::from_millis(200)), (0, 5));
        assert_eq!(plan.counts(Duration::from_secs(3)), (0, 1));
        let fixed = TimingPlan::new(Some(7));
        assert_eq!(fixed.counts(Duration::from_secs(3)).1, 7);
    }
}
