//! `weft model run --dim NAME=MIN..MAX --dim-value NAME=N1,N2,...`: a model with
//! symbolic dimensions compiled once and run at each length asked for, each run checked
//! against the float64 reference of the file imported at that length.

use std::time::Instant;

use ndarray::ArrayD;
use weft_graph::Graph;
use weft_model::CompiledModel;
use weft_model::buckets::{Buckets, bounds_from, default_bounds};
use weft_model::measure::{relative_error, tolerance};

use crate::error::CliError;
use crate::format::fmt_time;
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

/// `N1,N2,...` as lengths.
fn length_list(list: &str) -> Result<Vec<usize>, std::num::ParseIntError> {
    list.split(',').map(|v| v.trim().parse::<usize>()).collect()
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
        let ns = length_list(list).map_err(|_| {
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

/// `bytes` in KiB below a MiB, else in MiB.
fn bytes_text(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
    }
}

/// The buckets `--buckets` asks for over `g`'s one symbol (one bucket, the whole range,
/// where it has several symbols or `none` is asked).
fn bucket_bounds(a: &ModelRunArgs, g: &Graph) -> Result<Vec<(usize, usize)>, CliError> {
    let bad = |what: String| CliError::ModelFile(ModelFileError::Dim(what));
    let [s] = g.symbols.as_slice() else {
        if !matches!(a.buckets.as_str(), "auto" | "none") {
            return Err(bad(format!(
                "--buckets {}: the model has {} symbolic dimensions; buckets cut a model of one",
                a.buckets,
                g.symbols.len()
            )));
        }
        let s = &g.symbols[0];
        return Ok(vec![(s.min, s.max)]);
    };
    match a.buckets.as_str() {
        "none" => Ok(vec![(s.min, s.max)]),
        "auto" => Ok(default_bounds(s.min, s.max)),
        list => {
            let maxima = length_list(list).map_err(|_| {
                bad(format!(
                    "--buckets `{list}`: write auto, none or the buckets' last lengths (16,64)"
                ))
            })?;
            bounds_from(&maxima, s.min, s.max)
                .map_err(|why| bad(format!("--buckets `{list}`: {why}")))
        }
    }
}

/// `source` with its `--dim` for `symbol` made `symbol=lo..hi`.
fn with_range(
    a: &ModelRunArgs,
    symbol: &str,
    lo: usize,
    hi: usize,
) -> crate::model_args::ModelSource {
    let mut source = a.source.clone();
    source.dim.retain(|d| !d.starts_with(&format!("{symbol}=")));
    source.dim.push(format!("{symbol}={lo}..{hi}"));
    source
}

/// Compiles `g` once per bucket of its symbol's range (`--buckets`) and runs it at each
/// length `--dim-value` asks for, each run on the bucket holding its length.
pub(super) fn run_lengths(
    a: &ModelRunArgs,
    g: &Graph,
    opened: &mut Opened,
) -> Result<(), CliError> {
    let asked = lengths(a, g)?;
    let bounds = bucket_bounds(a, g)?;
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
    let symbol = g.symbols[0].name.clone();
    let whole = (g.symbols[0].min, g.symbols[0].max);
    let buckets = Buckets::compile(
        &symbol,
        &bounds,
        |lo, hi| {
            if (lo, hi) == whole {
                Ok(g.clone())
            } else {
                load(&with_range(a, &symbol, lo, hi))
            }
        },
        &dev.limits(),
        &opts,
    )?;
    let context = format!("{} on {}", a.source.model, opened.target);
    let exe = buckets
        .load(dev)
        .map_err(|e| on_device(context.clone(), e))
        .map_err(naming_sizes(&a.source))?;
    outln!("model     {} ({})", a.source.model, g.name)?;
    let one = buckets.parts.len() == 1;
    for (i, s) in g.symbols.iter().enumerate() {
        if i == 0 && !one {
            outln!(
                "symbol    {} \u{2208} {}..{} in {} buckets, each compiled at its maximum; a run takes the one holding its length",
                s.name,
                s.min,
                s.max,
                buckets.parts.len()
            )?;
            for (lo, hi, m) in &buckets.parts {
                outln!("bucket    {symbol}={lo}..{hi}: {}", symbol_work(m, 0, *hi))?;
            }
        } else {
            outln!(
                "symbol    {s}: {}",
                symbol_work(&buckets.parts[0].2, i, s.max)
            )?;
        }
    }
    let shared = exe.shared_weight_bytes();
    outln!(
        "compiled  once{}: {} kernels in {:.2} s (passes, partition, lowering, device compile){}",
        if one { "" } else { " per bucket" },
        buckets.kernel_count(),
        started.elapsed().as_secs_f64(),
        if shared > 0 {
            format!("; {} of weights shared by the buckets", bytes_text(shared))
        } else {
            String::new()
        }
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
            let fixed_g = match g.symbols.iter().find(|s| {
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
            // The device time of the run's launches at this length (the inputs and the
            // length stay uploaded), on the bucket it took.
            let n = values
                .iter()
                .find(|(name, _)| *name == symbol)
                .map_or(0, |&(_, n)| n);
            let (lo, hi, picked) = exe.pick(n).map_err(|e| on_device(context.clone(), e))?;
            let timing = picked
                .time(dev, 2, a.iters as usize)
                .map_err(|e| on_device(context.clone(), e))?;
            let bucket = if one {
                String::new()
            } else {
                format!(" (bucket {lo}..{hi})")
            };
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
                "run       {at}{bucket}: outputs {}; {took:.3} s; device {} (median of {}); {check}",
                shapes.join(", "),
                fmt_time(timing.median),
                a.iters
            )?;
        }
        Ok(())
    })();
    exe.free(dev);
    result
}
