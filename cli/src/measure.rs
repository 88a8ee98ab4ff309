//! One measurement: a workload's schedule run on a device, checked against the
//! reference, then timed. Shared by `weft run` and `weft bench`.

use std::time::{Duration, Instant};

use weft_ir::bounds::{BoundsReport, prove_all};
use weft_ops::Workload;
use weft_ops::templates::Config;
use weft_runtime::shader_checks::ChecksDecision;
use weft_runtime::{Device, ShaderChecks, Timing};

use crate::error::CliError;
use weft_ops::check::{Checker, max_error};

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
    /// Largest relative error against the float64 reference (infinite for NaN).
    pub max_error: f64,
    /// The largest error a right result may have ([`Workload::tolerance`]: f16 outputs
    /// are rounded once more than f32 ones).
    pub tolerance: f64,
    pub timing: Timing,
    /// The bounds prover's report per kernel (every target: on CUDA it finds bugs).
    pub bounds: Vec<BoundsReport>,
    /// The device's runtime-check mode (wgpu targets only).
    pub shader_checks: Option<ShaderChecks>,
}

impl Measured {
    /// True when the error is within the workload's tolerance.
    pub fn is_right(&self) -> bool {
        self.max_error <= self.tolerance
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

/// Lowers `schedule` of `w` (a template with `config`), runs it once on random inputs (seeded) with a poisoned
/// output, checks the output, then times it per `plan`.
///
/// A wrong result is not an error here: it comes back in [`Measured::max_error`], with
/// its timing, so that a benchmark can still show it.
pub fn measure(
    device: &mut dyn Device,
    w: &Workload,
    schedule: &str,
    config: Option<&Config>,
    plan: &TimingPlan,
    seed: u64,
) -> Result<Measured, CliError> {
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
    inputs: &[ndarray::ArrayD<f32>],
    checker: Option<&Checker>,
) -> Result<(Measured, Option<ndarray::ArrayD<f32>>), CliError> {
    let what = describe(w, schedule, device);
    let lowered = w.lower_with(schedule, config)?;
    let mut args = w.args(inputs);
    let started = Instant::now();
    device
        .run(&lowered, &mut args)
        .map_err(|e| CliError::device(format!("running {what}"), e))?;
    let first_run = started.elapsed();
    let output = w.output_of(&args);
    let max_error = match (&output, checker) {
        (Some(out), Some(c)) => c.max_error(out),
        (Some(out), None) => max_error(w, inputs, out),
        (None, _) => f64::INFINITY,
    };
    // The first run's wall-clock time includes compiling and uploading: when even that
    // fits the budget, one timed run measures the kernels alone.
    let per_run = if plan.iters.is_some() {
        first_run
    } else if first_run >= plan.budget {
        plan.budget
    } else {
        device
            .time(&lowered, &args, 0, 1)
            .map_err(|e| CliError::device(format!("timing {what}"), e))?
            .median
    };
    let (warmup, iters) = plan.counts(per_run);
    let timing = device
        .time(&lowered, &args, warmup, iters)
        .map_err(|e| CliError::device(format!("timing {what}"), e))?;
    let measured = Measured {
        max_error,
        tolerance: w.tolerance(),
        timing,
        bounds: prove_all(&lowered),
        shader_checks: device.shader_checks(),
    };
    Ok((measured, output))
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
