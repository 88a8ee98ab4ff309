//! `weft bench`: every op x schedule on every chosen target, with reference rows on CUDA.

use std::collections::HashMap;

use ndarray::ArrayD;
use weft_ops::Workload;
use weft_ops::check::Checker;
use weft_runtime::reference::CudaReference;
use weft_runtime::{ShaderChecks, Target, WgpuOptions};

use crate::args::{BenchArgs, SizeClass};
use crate::bench::{BenchRun, Bound, Place, Row, TargetRecord, bound, finish, render};
use crate::error::CliError;
use crate::out::out;
use crate::progress::Progress;
use crate::references;
use crate::select::{self, Opened};
use weft_tune::measure::{TimingPlan, measure_on};

/// Runs the benchmark, prints the table, writes the JSON; fails (exit 1) if any row is
/// wrong or failed. Refused rows are reported, not failures.
pub fn bench(a: &BenchArgs) -> Result<(), CliError> {
    if let Some(path) = &a.json {
        crate::paths::output_file("--json", path)?;
    }
    let run = collect(a)?;
    out!("{}", header(&run.targets))?;
    out!("{}", render(&run.rows, &run.first_target()))?;
    out!("{}", configs_used(&run.rows))?;
    if let Some(path) = &a.json {
        write_json(&run, path)?;
    }
    run.verdict()
}

/// Writes a run as the JSON document `--json` promises.
pub fn write_json(run: &BenchRun, path: &std::path::Path) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(run)?;
    std::fs::write(path, text + "\n").map_err(|source| CliError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Measures every op x schedule on every target of `a` (and the CUDA references), with a
/// progress bar on stderr.
pub fn collect(a: &BenchArgs) -> Result<BenchRun, CliError> {
    let ops = select::ops(&a.ops)?;
    let options = WgpuOptions {
        shader_checks: a.checks.mode(),
        ..WgpuOptions::default()
    };
    let mut targets: Vec<Opened> = if a.targets.is_empty() {
        select::default_targets(options)
    } else {
        a.targets
            .iter()
            .map(|t| select::open_str(t.trim(), options))
            .collect::<Result<_, _>>()?
    };
    let sizes: Vec<SizeClass> = targets.iter().map(|t| a.size.unwrap_or(t.size)).collect();
    let records: Vec<TargetRecord> = targets
        .iter()
        .zip(&sizes)
        .map(|(t, s)| TargetRecord {
            target: t.target.to_string(),
            device: t.device.name(),
            driver: t.device.driver(),
            size: size_name(*s).to_string(),
            shader_checks: t.device.shader_checks(),
        })
        .collect();
    let first = records
        .first()
        .map(|r| r.target.clone())
        .unwrap_or_default();

    let plan = TimingPlan::new(a.iters);
    let tuning_records = select::records(a.records.as_deref())?;
    let mut work = Vec::new();
    for (t, size) in targets.iter().zip(&sizes) {
        let mut per_op = Vec::new();
        for op in &ops {
            per_op.push(select::shapes(op, *size)?);
        }
        work.push((is_cuda(&t.target), per_op));
    }
    let total: usize = work
        .iter()
        .map(|(cuda, per_op)| {
            ops.iter()
                .zip(per_op)
                .map(|(op, shapes)| shapes.len() * (op.schedules.len() + *cuda as usize))
                .sum::<usize>()
        })
        .sum();
    let progress = Progress::new(
        "bench",
        "runs",
        "[{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
        total as u64,
    );
    progress.phase("measuring", total as u64);

    let mut rows = Vec::new();
    let mut checkers: Checkers = HashMap::new();
    // Shapes in order of first appearance per op, so rows of one shape sort together.
    let mut shape_keys: Vec<(usize, String)> = Vec::new();
    for (ti, (opened, (_, per_op))) in targets.iter_mut().zip(&work).enumerate() {
        let target = opened.target.to_string();
        let device = opened.device.name();
        let mut reference: Option<Result<CudaReference, CliError>> = None;
        for (oi, (op, shapes)) in ops.iter().zip(per_op).enumerate() {
            for shape in shapes {
                let key = (oi, shape.to_string());
                let si = match shape_keys.iter().position(|k| *k == key) {
                    Some(i) => i,
                    None => {
                        shape_keys.push(key);
                        shape_keys.len() - 1
                    }
                };
                let place = |schedule| Place {
                    op: oi,
                    shape: si,
                    schedule,
                    target: ti,
                };
                let w = match Workload::new(op.name, shape) {
                    Ok(w) => w,
                    Err(e) => {
                        let e = CliError::from(e);
                        for (ki, schedule) in op.schedules.iter().enumerate() {
                            rows.push(Row::undefined(
                                op,
                                shape,
                                schedule,
                                &target,
                                &device,
                                place(ki),
                                &e,
                            ));
                        }
                        progress.inc(op.schedules.len() as u64 + is_cuda(&opened.target) as u64);
                        continue;
                    }
                };
                for (ki, schedule) in op.schedules.iter().enumerate() {
                    progress.message(format!("{}/{schedule} {shape} on {target}", op.name));
                    let limits = opened.device.limits();
                    let choice = weft_tune::choose(
                        &w,
                        schedule,
                        &opened.target,
                        &device,
                        &limits,
                        tuning_records.as_ref(),
                    );
                    let config = choice.as_ref().map(|c| &c.config);
                    let (inputs, checker) = checked_inputs(&mut checkers, &w);
                    let result = measure_on(
                        opened.device.as_mut(),
                        &w,
                        schedule,
                        config,
                        &plan,
                        inputs,
                        Some(checker),
                    )
                    .map(|(m, _)| m)
                    .map_err(CliError::from);
                    let row = Row::weft(
                        &w,
                        schedule,
                        &target,
                        &device,
                        place(ki),
                        choice.as_ref(),
                        result,
                    );
                    rows.push(row);
                    progress.inc(1);
                }
                if is_cuda(&opened.target) {
                    progress.message(format!("{} reference {shape} on {target}", op.name));
                    let r = reference.get_or_insert_with(|| {
                        CudaReference::open(&opened.target).map_err(|e| CliError::Reference {
                            context: "opening the CUDA reference".to_string(),
                            source: Box::new(e),
                        })
                    });
                    let memory_bound = bound(op) == Bound::Memory;
                    let r = r.as_mut().map_err(|e| &*e);
                    let (inputs, checker) = checked_inputs(&mut checkers, &w);
                    rows.extend(references::rows(
                        &w,
                        inputs,
                        checker,
                        &target,
                        r,
                        place(0),
                        &plan,
                        memory_bound,
                    ));
                    progress.inc(1);
                }
            }
        }
    }
    progress.finish();
    finish(&mut rows, &first);
    Ok(BenchRun {
        weft_version: env!("CARGO_PKG_VERSION").to_string(),
        commit: crate::COMMIT.to_string(),
        unix_time: weft_tune::unix_now(),
        tolerance: 1.0,
        shader_checks: options.shader_checks.name().to_string(),
        targets: records,
        rows,
    })
}

/// Per op and shape: the random inputs every row runs on and their float64 reference,
/// computed once (a large convolution's reference takes seconds).
type Checkers = HashMap<(&'static str, String), (Vec<ArrayD<f32>>, Checker)>;

fn checked_inputs<'a>(
    checkers: &'a mut Checkers,
    w: &Workload,
) -> (&'a [ArrayD<f32>], &'a Checker) {
    let (inputs, checker) = checkers
        .entry((w.op.name, w.shape.to_string()))
        .or_insert_with(|| {
            let inputs = w.random_inputs(0);
            let checker = Checker::new(w, &inputs);
            (inputs, checker)
        });
    (inputs, checker)
}

fn is_cuda(t: &Target) -> bool {
    matches!(t, Target::Cuda { .. })
}

fn size_name(s: SizeClass) -> &'static str {
    match s {
        SizeClass::Small => "small",
        SizeClass::Bench => "bench",
    }
}

fn header(records: &[TargetRecord]) -> String {
    let mut out = String::from("targets (ratios are to the first):\n");
    let w = records.iter().map(|r| r.target.len()).max().unwrap_or(0);
    for r in records {
        let unchecked = match r.shader_checks {
            Some(ShaderChecks::Proven) => ", WGSL runtime checks off where proven",
            Some(ShaderChecks::Checked) => ", WGSL with runtime checks",
            Some(ShaderChecks::Unchecked) => ", WGSL without runtime checks",
            None => "",
        };
        out.push_str(&format!(
            "  {:<w$}  {}  ({} shapes{unchecked})\n",
            r.target, r.device, r.size
        ));
    }
    out.push('\n');
    out
}

/// One line per template row: the config it ran with and where that came from.
fn configs_used(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        if let (Some(c), Some(src)) = (&r.config, &r.config_source) {
            if out.is_empty() {
                out.push_str("\ntemplate configs:\n");
            }
            out.push_str(&format!(
                "  {}/{} {} on {}: {c}\n    {src}\n",
                r.op, r.schedule, r.shape, r.target
            ));
        }
    }
    out
}
