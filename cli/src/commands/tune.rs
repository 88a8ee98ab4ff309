//! `weft tune`: tune an op's template for one shape on one target, or list its space.

use std::path::PathBuf;
use std::time::Duration;

use weft_ops::templates::TemplateSpec;
use weft_ops::{OpSpec, Workload};
use weft_runtime::reference::CudaReference;
use weft_runtime::{Target, WgpuOptions};
use weft_tune::{Outcome, Record, Records, TuneOptions, Tuned};

use crate::args::{SizeClass, TuneArgs};
use crate::error::CliError;
use crate::format::{Table, fmt_ratio, fmt_sig, fmt_time};
use crate::out::{out, outln};
use crate::progress::Progress;
use crate::select;

/// Configs timed on slow devices (the interpreter, CPU adapters) unless `--sample` says.
const CPU_SAMPLE: usize = 16;

/// How many of the best configs are printed.
const SHOWN: usize = 5;

/// Runs the command.
pub fn tune(a: &TuneArgs) -> Result<(), CliError> {
    let op = weft_ops::find(&a.op)?;
    let spec = template_of(op)?;
    let target = Target::parse(&a.target)?;
    if a.list {
        return list(op, spec, &target);
    }
    // Where the record goes is checked before any tuning: a run of minutes must not end
    // in "cannot save".
    let records = if a.no_save {
        None
    } else {
        Some(records_path(a.records.clone())?)
    };
    let options = WgpuOptions {
        shader_checks: a.checks.mode(),
        ..WgpuOptions::default()
    };
    let mut opened = select::open(&target, options)?;
    let shape = select::shape(op, a.shape.as_deref(), opened.size)?;
    let w = Workload::new(op.name, &shape)?;
    let device_name = opened.device.name();
    let limits = opened.device.limits();
    let sample = match (a.sample, opened.size) {
        (Some(n), _) => Some(n as usize),
        (None, SizeClass::Small) => Some(CPU_SAMPLE),
        (None, SizeClass::Bench) => None,
    };
    outln!(
        "tuning {}/{} at {} on {target} ({device_name})",
        op.name,
        spec.schedule,
        w.shape
    )?;
    let all = (spec.space)(&limits);
    let space = all
        .iter()
        .filter(|c| (spec.pays)(&limits, &w.shape, c))
        .count();
    let left_out = match all.len() - space {
        0 => String::new(),
        n => format!(
            " ({n} configs left out: split-K configs that cannot pay at this shape, or tiles that do not fit the target at it)"
        ),
    };
    outln!(
        "space: {space} configs for {} ({} threads, {} B shared, {} registers per thread){left_out}{}",
        limits.name,
        limits.max_threads_per_block,
        limits.max_shared_bytes,
        limits.max_registers,
        match sample {
            Some(n) if n < space => format!("; timing a sample of {n}, spread over the space"),
            _ => String::new(),
        }
    )?;
    let opts = TuneOptions {
        sample,
        seed: a.seed,
        ..TuneOptions::default()
    };
    let progress = Progress::new(
        format!("tune {}", op.name),
        "configs",
        "[{elapsed_precise}] {msg:<9} {bar:30} {pos}/{len}",
        0,
    );
    let tuned = weft_tune::tune(opened.device.as_mut(), &w, spec, &limits, &opts, &progress)?;
    progress.finish();

    let reference = if matches!(target, Target::Cuda { .. }) && op.name == "matmul" {
        cublas(&target, &w)
    } else {
        None
    };
    out!("{}", table(&tuned, &w, reference))?;
    if let Some(r) = reference {
        outln!(
            "cuBLAS SGEMM: {} ({}), same device, kernel time",
            fmt_time(r),
            fmt_flops(w.flops / r.as_secs_f64())
        )?;
    }
    let timed = tuned.trials.iter().filter(|t| t.time().is_some()).count();
    let failed: Vec<_> = tuned
        .trials
        .iter()
        .filter_map(|t| match &t.outcome {
            Outcome::Failed(why) => Some((t, why)),
            _ => None,
        })
        .collect();
    let wrong: Vec<_> = tuned.wrong().collect();
    outln!(
        "timed {timed} of {} configs in {:.1} s (building and compiling: {:.1} s); checked {} \
         against the float64 reference ({}); {} wrong, {} failed",
        tuned.trials.len(),
        tuned.elapsed.as_secs_f64(),
        tuned.compile_time.as_secs_f64(),
        tuned.checked,
        if tuned.checked >= timed {
            "every one".to_string()
        } else {
            format!(
                "the fastest, until {} were right",
                weft_tune::CHECKED_FASTEST
            )
        },
        wrong.len(),
        failed.len()
    )?;
    for (t, why) in failed.iter().take(3) {
        eprintln!("weft: config {} failed: {why}", t.config);
    }
    if let Some(t) = wrong.first() {
        let error = match t.outcome {
            Outcome::Wrong { error } => error,
            _ => f64::INFINITY,
        };
        return Err(CliError::Wrong {
            what: format!(
                "{}/{} config {} at {} on {target}",
                op.name, spec.schedule, t.config, w.shape
            ),
            error,
            detail: format!(
                "error {} times the tolerance ({})",
                crate::format::fmt_ratio_of_tolerance(error),
                w.rule()
            ),
        });
    }
    let Some(best) = tuned.best() else {
        return Err(CliError::Summary {
            wrong: failed.len(),
            refused: 0,
            total: tuned.trials.len(),
        });
    };
    let Some(path) = records else {
        return Ok(());
    };
    let key = weft_tune::choose::key(&w, spec.schedule, &target, &device_name);
    let record = Record {
        op: key.op,
        schedule: key.schedule,
        shape: key.shape,
        dtype: key.dtype,
        target: key.target,
        device: key.device,
        weft_version: key.version,
        config: best.config.to_string(),
        time_us: best.time().unwrap_or_default().as_secs_f64() * 1e6,
        reference_us: reference.map(|r| r.as_secs_f64() * 1e6),
        space: tuned.space,
        timed,
        tuning_seconds: tuned.elapsed.as_secs_f64(),
        unix_time: weft_tune::unix_now(),
    };
    // Merged into the file as it is now, under its lock: other `weft tune` processes may
    // have saved records since this one started.
    let stored = Records::store(&path, record)?;
    if let Some((aside, why)) = &stored.set_aside {
        eprintln!(
            "weft: warning: tuning records `{}` were not a JSON array of records ({why}): kept \
             them as `{}` and started a new file",
            path.display(),
            aside.display()
        );
    }
    outln!("best {} saved to {}", best.config, path.display())?;
    Ok(())
}

/// The records file `tune` saves to (`--records`, else the default place), checked
/// writable: exit 2 naming the path before any tuning when it is not.
pub(crate) fn records_path(given: Option<PathBuf>) -> Result<PathBuf, CliError> {
    let path = given
        .or_else(Records::default_path)
        .ok_or(CliError::NoRecordsPath)?;
    Records::check_writable(&path)?;
    Ok(path)
}

/// The op's template, or the error that there is nothing to tune.
fn template_of(op: &'static OpSpec) -> Result<&'static TemplateSpec, CliError> {
    op.template.ok_or_else(|| CliError::NothingToTune {
        op: op.name.to_string(),
        schedules: op.schedules.join(", "),
        templates: select::templates(),
    })
}

/// `--list`: the space for what the target offers (the open device's where it is
/// available, the target's offline profile otherwise).
fn list(op: &OpSpec, spec: &TemplateSpec, target: &Target) -> Result<(), CliError> {
    let (limits, whence) = match select::open(target, WgpuOptions::default()) {
        Ok(o) => (o.device.limits(), format!("device {}", o.device.name())),
        Err(_) => (
            target.limits(),
            "offline profile: the target is not available here".to_string(),
        ),
    };
    let r = limits;
    let space = (spec.space)(&r);
    outln!(
        "{}/{} on {target} ({whence}): {} threads, {} B shared, {} registers per thread",
        op.name,
        spec.schedule,
        r.max_threads_per_block,
        r.max_shared_bytes,
        r.max_registers
    )?;
    let splits = space.iter().filter(|c| c.get("sk").is_some()).count();
    let of_them = match splits {
        0 => String::new(),
        n => format!(
            " ({n} of them split-K, `sk`: tuning times those only at shapes with few output \
             tiles and a long reduction)"
        ),
    };
    outln!(
        "{} configs; the same for every input size{of_them}",
        space.len()
    )?;
    let default = (spec.default)(&r);
    let mut t = Table::new(&["config", "", "what it is"]);
    for c in &space {
        let mark = if *c == default { "default" } else { "" };
        t.row(vec![
            c.to_string(),
            mark.to_string(),
            (spec.describe)(c).unwrap_or_else(|e| e),
        ]);
    }
    out!("{}", t.render())?;
    if spec.rule.is_some() {
        outln!(
            "with no tuning record, `weft run` and `weft bench` take the config the template's \
             rule picks for the shape and target (they print which and why); `default` marks \
             the one a build given no config uses"
        )?;
    }
    outln!("parameters:")?;
    for (name, meaning) in spec.params {
        outln!("  {name:<3} {meaning}")?;
    }
    Ok(())
}

/// The best configs with their times and the ratio to the reference.
fn table(tuned: &Tuned, w: &Workload, reference: Option<Duration>) -> String {
    let mut header = vec!["rank", "config", "what it is", "median", "throughput"];
    if reference.is_some() {
        header.push("speed vs cuBLAS");
    }
    let mut t = Table::new(&header).align_right(&[3, 4, 5]);
    for (i, trial) in tuned
        .trials
        .iter()
        .filter(|t| t.time().is_some())
        .take(SHOWN)
        .enumerate()
    {
        let time = trial.time().unwrap_or_default();
        t.row(vec![
            (i + 1).to_string(),
            trial.config.to_string(),
            trial.summary.clone(),
            fmt_time(time),
            fmt_flops(w.flops / time.as_secs_f64().max(1e-12)),
            reference.map_or(String::new(), |r| {
                fmt_ratio(r.as_secs_f64() / time.as_secs_f64().max(1e-12))
            }),
        ]);
    }
    t.render()
}

/// cuBLAS SGEMM's kernel time at the workload's shape, or `None` (with a note) when the
/// reference cannot run here.
fn cublas(target: &Target, w: &Workload) -> Option<Duration> {
    let dims: Vec<usize> = ["m", "n", "k"]
        .iter()
        .map(|d| w.shape.get(d).max(0) as usize)
        .collect();
    let inputs = w.random_inputs(0);
    let flat = |i: usize| -> Vec<f32> { inputs[i].iter().copied().collect() };
    let result = CudaReference::open(target)
        .and_then(|mut r| r.sgemm(&flat(0), &flat(1), [dims[0], dims[1], dims[2]], 3, 20));
    match result {
        Ok((_, timing)) => Some(timing.median),
        Err(e) => {
            eprintln!("weft: no cuBLAS reference: {e}");
            None
        }
    }
}

/// `34.2 TFLOP/s`, `812 GFLOP/s`, `1.76 GFLOP/s`, `29.4 MFLOP/s`.
fn fmt_flops(per_second: f64) -> String {
    let (v, unit) = if per_second >= 1e12 {
        (per_second / 1e12, "TFLOP/s")
    } else if per_second >= 1e9 {
        (per_second / 1e9, "GFLOP/s")
    } else {
        (per_second / 1e6, "MFLOP/s")
    };
    format!("{} {unit}", fmt_sig(v))
}
