//! `weft model run --dim NAME=MIN..MAX --dim-value NAME=N1,N2,...`: a model with
//! symbolic dimensions compiled once and run at each length asked for, each run checked
//! against the float64 reference of the file imported at that length.

use std::time::Instant;

use ndarray::ArrayD;
use weft_graph::Graph;
use weft_model::CompiledModel;
use weft_model::measure::{relative_error, tolerance};

use crate::error::CliError;
use crate::model_args::ModelRunArgs;
use crate::model_compile::{choices, load, naming_sizes, on_device, options, random_inputs};
use crate::models::ModelFileError;
use crate::out::outln;
use crate::select::Opened;

/// The largest run the float64 reference checks, in multiply-adds.
const CHECK_MACS: f64 = 2e10;

/// `--dim-value` parsed: per symbol, its lengths.
/// What a run at a length below symbol `i`'s maximum `max` runs of `model`: the kernels
/// that skip their blocks past it (the first symbol's, where the target takes it), and
/// the rest masked to it.
pub(crate) fn symbol_work(model: &CompiledModel, i: usize, max: usize) -> String {
    let b = &model.bounded;
    let total = model.kernel_count();
    if i == 0 && !b.kernels.is_empty() {
        let (run, all) = b.blocks_at(1);
        format!(
            "every kernel launched at {max}; {} of {total} skip their blocks past the run's length ({run} of {all} blocks run at 1), the rest masked to it",
            b.kernels.len()
        )
    } else {
        let why = match (i, &b.off) {
            (0, Some(off)) => format!(" (none skips its blocks past it: {off})"),
            _ => String::new(),
        };
        format!("every kernel launched at {max}, masked to the run's length{why}")
    }
}

fn lengths(a: &ModelRunArgs, g: &Graph) -> Result<Vec<(String, Vec<usize>)>, CliError> {
    let bad = |what: String| CliError::ModelFile(ModelFileError::Dim(what));
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for text in &a.dim_value {
        let (name, list) = text.split_once('=').ok_or_else(|| {
            bad(format!(
                "--dim-value `{text}`: write NAME=N or NAME=N1,N2,..."
            ))
        })?;
        if !g.symbols.iter().any(|s| s.name == name) {
            let known: Vec<&str> = g.symbols.iter().map(|s| s.name.as_str()).collect();
            return Err(bad(format!(
                "--dim-value `{text}`: `{name}` is no symbolic dimension of the model ({}); give it a range with --dim {name}=MIN..MAX",
                if known.is_empty() {
                    "it has none".to_string()
                } else {
                    format!("it has {}", known.join(", "))
                }
            )));
        }
        let ns = list
            .split(',')
            .map(|v| v.trim().parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                bad(format!(
                    "--dim-value `{text}`: `{list}` is not a list of lengths"
                ))
            })?;
        out.push((name.to_string(), ns));
    }
    for s in &g.symbols {
        if !out.iter().any(|(n, _)| *n == s.name) {
            return Err(bad(format!(
                "--dim-value: give the symbol `{}` a length ({}..{})",
                s.name, s.min, s.max
            )));
        }
    }
    let runs = out.iter().map(|(_, ns)| ns.len()).max().unwrap_or(0);
    if out.iter().any(|(_, ns)| ns.len() != runs && ns.len() != 1) {
        return Err(bad(
            "--dim-value: give every symbol as many lengths, or one".into(),
        ));
    }
    Ok(out)
}

/// Compiles `g` once and runs it at each length `--dim-value` asks for.
pub(super) fn run_lengths(
    a: &ModelRunArgs,
    g: &Graph,
    opened: &mut Opened,
) -> Result<(), CliError> {
    let asked = lengths(a, g)?;
    let runs = asked.iter().map(|(_, ns)| ns.len()).max().unwrap_or(0);
    let choices = choices(
        a.records.as_deref(),
        &opened.target,
        &opened.device.name(),
        a.source.dtype,
    )?;
    let opts = options(&a.source, choices);
    let dev = opened.device.as_mut();
    let started = Instant::now();
    let model = CompiledModel::compile(g, &dev.limits(), &opts).map_err(CliError::model)?;
    let context = format!("{} on {}", a.source.model, opened.target);
    let exe = model
        .load(dev)
        .map_err(|e| on_device(context.clone(), e))
        .map_err(naming_sizes(&a.source))?;
    outln!("model     {} ({})", a.source.model, g.name)?;
    for (i, s) in g.symbols.iter().enumerate() {
        outln!("symbol    {s}: {}", symbol_work(&model, i, s.max))?;
    }
    outln!(
        "compiled  once: {} kernels in {:.2} s (passes, partition, lowering, device compile)",
        model.kernel_count(),
        started.elapsed().as_secs_f64()
    )?;
    let tol = tolerance(opts.precision);
    let result = (|| -> Result<(), CliError> {
        for r in 0..runs {
            let values: Vec<(&str, usize)> = asked
                .iter()
                .map(|(name, ns)| (name.as_str(), ns[r.min(ns.len() - 1)]))
                .collect();
            let at: Vec<String> = values.iter().map(|(n, v)| format!("{n}={v}")).collect();
            let at = at.join(", ");
            // The same file imported at these lengths, static: its inputs' shapes and
            // its float64 reference.
            let mut fixed = a.source.clone();
            fixed
                .dim
                .retain(|d| !values.iter().any(|(n, _)| d.starts_with(&format!("{n}="))));
            fixed
                .dim
                .extend(values.iter().map(|(n, v)| format!("{n}={v}")));
            let fixed_g = match exe.symbols().iter().find(|s| {
                values
                    .iter()
                    .any(|&(n, v)| n == s.name && !(s.min..=s.max).contains(&v))
            }) {
                // Out of range: the run refuses it, naming the symbol.
                Some(_) => g.clone(),
                None => load(&fixed)?,
            };
            let inputs = random_inputs(&fixed_g, a.seed);
            let t = Instant::now();
            let got = exe
                .run_at(dev, &values, &inputs)
                .map_err(|e| on_device(context.clone(), e))?;
            let took = t.elapsed().as_secs_f64();
            let shapes: Vec<String> = got.iter().map(|y| format!("{:?}", y.shape())).collect();
            let check = if a.no_check || fixed_g.macs() > CHECK_MACS {
                "not checked".to_string()
            } else {
                let x64: Vec<ArrayD<f64>> = inputs.iter().map(|x| x.mapv(f64::from)).collect();
                let want = weft_graph::reference::evaluate(&fixed_g, &x64).map_err(|e| {
                    CliError::ModelFile(ModelFileError::Dim(format!("reference at {at}: {e}")))
                })?;
                let err = got
                    .iter()
                    .zip(&want)
                    .map(|(y, w)| relative_error(y, w))
                    .fold(0.0f64, f64::max);
                if err > tol {
                    return Err(CliError::Wrong {
                        what: format!("{} at {at}", a.source.model),
                        error: err / tol,
                        detail: format!(
                            "error {err:.2e} against the float64 reference, tolerance {tol:.0e}"
                        ),
                    });
                }
                format!("error {err:.2e} vs float64 (tolerance {tol:.0e})")
            };
            outln!(
                "run       {at}: outputs {}; {took:.3} s; {check}",
                shapes.join(", ")
            )?;
        }
        Ok(())
    })();
    exe.free(dev);
    result
}
