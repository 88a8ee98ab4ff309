//! `weft run`: one schedule (or, with `--all`, every one) on a target, checked against
//! the float64 reference and timed.

use weft_ops::{OpSpec, Shape};
use weft_runtime::{ShaderChecks, WgpuOptions};

use crate::args::{RunArgs, SizeClass};
use crate::error::CliError;
use crate::format::{fmt_error, fmt_ratio_of_tolerance, fmt_time};
use crate::out::outln;
use crate::select::{self, Opened};
use weft_tune::measure::{Measured, TimingPlan, describe, measure, measure_on};

/// Runs the command.
pub fn run(a: &RunArgs) -> Result<(), CliError> {
    if let Some(dir) = &a.save {
        crate::paths::output_dir("--save", dir)?;
    }
    let options = WgpuOptions {
        shader_checks: if a.checked_shaders {
            ShaderChecks::Checked
        } else {
            ShaderChecks::Proven
        },
        ..WgpuOptions::default()
    };
    let mut opened = select::open_str(&a.target, options)?;
    let plan = TimingPlan::new(a.iters);
    if a.all {
        return run_all(a, &mut opened, &plan);
    }
    // `required_unless_present = "all"` makes clap ask for `--op` before we get here.
    let op = weft_ops::find(a.op.as_deref().unwrap_or_default())?;
    let shape = select::shape(op, a.shape.as_deref(), opened.size)?;
    let (w, schedule) = select::workload(op.name, a.schedule.as_deref(), &shape)?;
    let records = select::records(a.records.as_deref())?;
    let choice = choose(a, &opened, &w, schedule, records.as_ref())?;
    let config = choice.as_ref().map(|c| &c.config);
    // A kernel the device refuses (its limits: shared memory, a buffer over the binding
    // size) is refused now, before inputs are drawn or read.
    let lowered = w.lower_with(schedule, config)?;
    weft_tune::measure::compile(opened.device.as_mut(), &lowered).map_err(|e| {
        CliError::device(
            format!(
                "compiling {}",
                describe(&w, schedule, opened.device.as_ref())
            ),
            e,
        )
    })?;
    let inputs = match &a.inputs {
        Some(dir) => crate::npy::load(dir, &w)?,
        None => w.random_inputs(a.seed),
    };
    let (m, output) = measure_on(
        opened.device.as_mut(),
        &w,
        schedule,
        config,
        &plan,
        &inputs,
        None,
    )?;
    let verdict = if m.is_right() { "ok" } else { "WRONG" };
    outln!("op        {}", op.name)?;
    outln!("schedule  {schedule}")?;
    if let Some(c) = &choice {
        outln!("config    {}", c.config)?;
        outln!("          {}", c.source)?;
    }
    outln!("shape     {}", w.shape)?;
    outln!("target    {} ({})", opened.target, opened.device.name())?;
    // Kernel time (device timers around back-to-back runs; a sample is one group's time
    // per run); the host's view is apart.
    outln!(
        "median    {} kernel time (min {}, {} samples)",
        fmt_time(m.timing.median),
        fmt_time(m.timing.min),
        m.timing.all.len()
    )?;
    if let (Some(host), Some(overhead)) = (m.timing.host, m.timing.launch_overhead()) {
        outln!(
            "host      {} per run launched and waited for: launch overhead {}",
            fmt_time(host),
            fmt_time(overhead)
        )?;
    }
    if let Some(x) = choice
        .as_ref()
        .and_then(|c| c.source.disagreement(m.timing.median))
    {
        outln!(
            "warning   {}",
            weft_tune::ChoiceSource::disagreement_note(x)
        )?;
    }
    outln!("error     {}: {verdict}", error_line(&m))?;
    outln!("          rule: {}", m.rule)?;
    print_bounds(&m)?;
    if let Some(dir) = &a.inputs {
        outln!("inputs    {}", dir.display())?;
    }
    // Saved even when wrong: a wrong output is what a user wants to look at.
    if let (Some(dir), Some(out)) = (&a.save, &output) {
        let paths = crate::npy::save(dir, &w, &inputs, out)?;
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        outln!("saved     {}", names.join(", "))?;
    }
    wrong_to_error(&m, || describe(&w, schedule, opened.device.as_ref()))
}

/// The config a template schedule runs with on the opened device (`--config`, a record,
/// or the default); `None` for other schedules.
fn choose(
    a: &RunArgs,
    opened: &Opened,
    w: &weft_ops::Workload,
    schedule: &str,
    records: Option<&weft_tune::Records>,
) -> Result<Option<weft_tune::Choice>, CliError> {
    select::config(
        w,
        schedule,
        &opened.target,
        &opened.device.name(),
        &opened.device.limits(),
        a.config.as_deref(),
        records,
    )
}

/// The bounds prover's verdict per kernel, and on wgpu what it decided about runtime
/// checks.
fn print_bounds(m: &Measured) -> Result<(), CliError> {
    let lines = m.checks_lines();
    if !lines.is_empty() {
        for (i, l) in lines.iter().enumerate() {
            outln!("{}{l}", if i == 0 { "checks    " } else { "          " })?;
        }
        return Ok(());
    }
    for (i, r) in m.bounds.iter().enumerate() {
        let head = if i == 0 { "bounds    " } else { "          " };
        outln!("{head}{r}")?;
    }
    Ok(())
}

/// `checks off (proven)` on wgpu, `bounds proven` or `bounds NOT proven` elsewhere.
fn bounds_short(m: &Measured) -> String {
    match m.checks_short() {
        Some(c) => format!("checks {c}"),
        None if m.is_proven() => "bounds proven".to_string(),
        None => "bounds NOT proven".to_string(),
    }
}

/// The error line's text: the worst element's error as a fraction of the tolerance, and
/// the largest absolute error.
fn error_line(m: &Measured) -> String {
    let e = &m.error;
    if !e.ratio.is_finite() {
        return format!("{e}");
    }
    format!(
        "{} of the tolerance, max |weft − ref| {}",
        fmt_ratio_of_tolerance(e.ratio),
        fmt_error(e.max_abs)
    )
}

fn wrong_to_error(m: &Measured, what: impl FnOnce() -> String) -> Result<(), CliError> {
    if m.is_right() {
        Ok(())
    } else {
        Err(CliError::wrong(what(), &m.error))
    }
}

/// The (op, shapes) pairs `--all` covers.
fn cases(a: &RunArgs) -> Result<Vec<(&'static OpSpec, Vec<Shape>)>, CliError> {
    let ops = match &a.op {
        Some(name) => vec![weft_ops::find(name)?],
        None => weft_ops::OPS.to_vec(),
    };
    let shapes: Vec<Vec<Shape>> = match &a.shape {
        Some(text) => select::shape_for_each(&ops, text)?
            .into_iter()
            .map(|s| vec![s])
            .collect(),
        None => ops
            .iter()
            .map(|op| select::shapes(op, SizeClass::Small))
            .collect::<Result<_, _>>()?,
    };
    // With `--schedule`, the ops that have it; naming a schedule none of them has is an
    // error that lists theirs.
    if let Some(s) = &a.schedule
        && !ops.iter().any(|op| op.schedules.contains(&s.as_str()))
    {
        let mut list: Vec<&str> = ops
            .iter()
            .flat_map(|op| op.schedules.iter().copied())
            .collect();
        list.sort_unstable();
        list.dedup();
        return Err(CliError::NoOpHasSchedule {
            schedule: s.clone(),
            valid: list.join(", "),
        });
    }
    Ok(ops.into_iter().zip(shapes).collect())
}

/// One line per op x schedule x shape; failures are described on stderr as they happen.
fn run_all(a: &RunArgs, opened: &mut Opened, plan: &TimingPlan) -> Result<(), CliError> {
    let (mut total, mut wrong, mut refused) = (0, 0, 0);
    outln!("target {} ({})", opened.target, opened.device.name())?;
    let records = select::records(a.records.as_deref())?;
    for (op, shapes) in cases(a)? {
        let schedules: Vec<&str> = match &a.schedule {
            Some(s) => op.schedules.iter().copied().filter(|x| x == s).collect(),
            None => op.schedules.to_vec(),
        };
        for shape in &shapes {
            for schedule in &schedules {
                total += 1;
                let label = format!("{}/{schedule} {shape}", op.name);
                let result = select::workload(op.name, Some(schedule), shape).and_then(|(w, s)| {
                    let choice = choose(a, opened, &w, s, records.as_ref())?;
                    let config = choice.as_ref().map(|c| &c.config);
                    let m = measure(opened.device.as_mut(), &w, s, config, plan, a.seed)?;
                    wrong_to_error(&m, || describe(&w, s, opened.device.as_ref()))?;
                    Ok(m)
                });
                match result {
                    Ok(m) => outln!(
                        "ok       {label:<48} median {:>10}  error {} of tol  {}",
                        fmt_time(m.timing.median),
                        fmt_ratio_of_tolerance(m.error.ratio),
                        bounds_short(&m)
                    )?,
                    Err(e) => {
                        let status = if e.is_refusal() {
                            refused += 1;
                            "REFUSED"
                        } else {
                            wrong += 1;
                            "WRONG"
                        };
                        outln!("{status:<8} {label}")?;
                        eprintln!("weft: {e}");
                    }
                }
            }
        }
    }
    outln!(
        "{total} runs: {} ok, {wrong} wrong or failed, {refused} refused",
        total - wrong - refused
    )?;
    if wrong + refused > 0 {
        return Err(CliError::Summary {
            wrong,
            refused,
            total,
        });
    }
    Ok(())
}
