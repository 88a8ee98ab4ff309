//! `weft model check`: weft against ONNX Runtime on the same inputs, and where they
//! disagree, the first graph node whose output differs (`crate::check`'s search; ONNX
//! Runtime through `crate::ort`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ndarray::ArrayD;
use weft_graph::{Graph, TensorId};
use weft_model::CompileOptions;
use weft_model::measure::{Measure, Measured, Reference, measure, relative_error, tolerance};
use weft_runtime::{Device, Target, WgpuOptions};

use crate::check::{self, Found, Round};
use crate::error::CliError;
use crate::model_args::ModelCheckArgs;
use crate::model_compile::{
    choices, load, measure_failed, naming_sizes, options, precision, random_inputs,
};
use crate::models::{self, ModelFileError};
use crate::npy;
use crate::ort::{Ort, Producer, WorkDir};
use crate::out::outln;
use crate::select;
use weft_graph::passes::Precision;

/// The tolerance of ONNX Runtime against the framework's outputs (`--expect`): both
/// compute in f32.
const EXPORT_TOLERANCE: Precision = Precision::F32;

/// Compiles of the model so far (each with its tensors exposed), for the cost line.
struct Compiles {
    count: usize,
}

pub(crate) fn check(a: &ModelCheckArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let chosen = a.target.is_none();
    let mut opened = match &a.target {
        Some(t) => select::open_str(t, WgpuOptions::default())?,
        None => select::best(WgpuOptions::default())?,
    };
    let (source, sized) = super::model_size::sized_for(&a.source, &opened);
    let g = load(&source)?;
    let work = WorkDir::new("check")?;
    // The file ONNX Runtime runs: the one given, the model's own, or weft's export of a
    // zoo model or a checkpoint (a directory ONNX Runtime cannot read).
    let checkpoint = crate::checkpoint::is_checkpoint(std::path::Path::new(&source.model));
    let built = match source.model.strip_prefix("zoo:") {
        Some(name) => Some(name),
        None if checkpoint => Some("checkpoint"),
        None => None,
    };
    let ort_file: PathBuf = match (&a.ort_model, built) {
        (Some(file), _) if !file.is_file() => {
            return Err(CliError::Usage(format!(
                "--ort-model `{}`: no such file",
                file.display()
            )));
        }
        (Some(file), _) => file.clone(),
        (None, Some(name)) => {
            let path = work
                .path()
                .join(format!("{}.onnx", models::clean_name(name)));
            weft_onnx::save(&g, &path).map_err(|source| CliError::Export {
                path: path.clone(),
                source,
            })?;
            path
        }
        (None, None) => PathBuf::from(&source.model),
    };
    let inputs: Vec<ArrayD<f32>> = match &a.inputs {
        Some(dir) => models::read_inputs(dir, &g)?,
        None => random_inputs(&g, a.seed),
    };
    let named: Vec<(&str, weft_ir::dtype::DType, &ArrayD<f32>)> = g
        .inputs
        .iter()
        .zip(&inputs)
        .map(|(&t, x)| (g.tensor(t).name.as_str(), g.tensor(t).dtype, x))
        .collect();

    outln!(
        "model     {} ({}): {} nodes",
        source.model,
        g.name,
        g.nodes.len()
    )?;
    let shapes: Vec<String> = g
        .inputs
        .iter()
        .map(|&t| {
            let x = g.tensor(t);
            format!("{} {} {:?}", x.name, x.dtype, x.shape)
        })
        .collect();
    let from = match &a.inputs {
        Some(dir) => format!("from {}", dir.display()),
        None => format!("random, seed {}", a.seed),
    };
    outln!("input     {} ({from})", shapes.join(", "))?;
    if let Some(line) = &sized {
        outln!("size      {line}")?;
    }
    let how = if chosen {
        ": the best this machine has (--target to pick)"
    } else {
        ""
    };
    outln!(
        "target    {} ({}){how}",
        opened.target,
        opened.device.name()
    )?;

    let mut ort = Ort::start(&a.python, &ort_file, work.path(), &named)?;
    let zoo = if source.model.starts_with("zoo:") {
        " (weft's export of the zoo model)"
    } else if checkpoint && a.ort_model.is_none() {
        " (weft's export of the checkpoint)"
    } else {
        ""
    };
    outln!(
        "reference ONNX Runtime {} on the CPU, graph optimizations off, running {}{zoo}",
        ort.version,
        ort_file.display()
    )?;
    if ort.outputs.len() != g.outputs.len() {
        return Err(CliError::Usage(format!(
            "`{}` has {} graph outputs and `{}` {}: ONNX Runtime and weft must run the same model",
            ort_file.display(),
            ort.outputs.len(),
            source.model,
            g.outputs.len()
        )));
    }
    let choices = choices(
        a.records.as_deref(),
        &opened.target,
        &opened.device.name(),
        source.dtype,
    )?;
    let opts = options(&source, choices);
    let p = precision(source.dtype);
    let tol = tolerance(p);
    let target = opened.target.clone();
    let dev = opened.device.as_mut();
    let mut compiles = Compiles { count: 0 };
    let wanted: Vec<ArrayD<f64>> = ort.outputs.iter().map(|(_, v)| v.clone()).collect();
    let whole = run_exposed(&g, &inputs, &wanted, dev, &opts, &target, &mut compiles)
        .map_err(naming_sizes(&source))?;
    outln!(
        "weft      {}: {}, compiled in {:.2} s",
        dtype_text(p),
        plural(whole.model.kernel_count(), "kernel"),
        whole.compile.as_secs_f64()
    )?;
    for (k, c) in whole.checked.iter().enumerate() {
        let shapes = if whole.outputs[k].shape() == wanted[k].shape() {
            String::new()
        } else {
            format!(
                " (shape {:?} where ONNX Runtime gives {:?})",
                whole.outputs[k].shape(),
                wanted[k].shape()
            )
        };
        outln!(
            "output    `{}`: {:.2e} = max |weft − ORT| / max |ORT| (tolerance {:.0e}): {}{shapes}",
            c.name,
            c.error,
            c.tolerance,
            verdict(c.error, c.tolerance)
        )?;
    }
    if let Some(dir) = &a.expect {
        expect(dir, &g, &whole, &ort, tol)?;
    }
    let Some(j) = whole.checked.iter().position(|c| !c.ok()) else {
        outln!("verdict   weft agrees with ONNX Runtime on every output")?;
        return cost(&compiles, &ort, started);
    };
    let bad = &whole.checked[j];
    outln!(
        "verdict   weft disagrees with ONNX Runtime at output `{}` by {:.2e}",
        bad.name,
        bad.error
    )?;
    let wrong = |detail: String| CliError::Wrong {
        what: source.model.clone(),
        error: bad.error / bad.tolerance,
        detail,
    };
    let out = g.outputs[j];
    let twin = |name: &str| ort.producers.contains_key(name);
    let candidates = check::candidates(&g, out, &twin);
    if candidates.last() != Some(&out) {
        outln!(
            "bisect    not possible: no node of `{}` computes a tensor `{}`",
            ort_file.display(),
            g.tensor(out).name
        )?;
        cost(&compiles, &ort, started)?;
        return Err(wrong(format!(
            "output `{}` differs from ONNX Runtime's by {:.2e}",
            bad.name, bad.error
        )));
    }
    let k = a.probes as usize;
    let rounds = ((candidates.len() as f64).ln() / ((k + 1) as f64).ln()).ceil() as usize;
    outln!(
        "bisect    {} with an ONNX Runtime twin lead to `{}`; up to {} stored per compile (about {})",
        plural(candidates.len(), "node"),
        bad.name,
        plural(k, "tensor"),
        plural(rounds.max(1), "compile")
    )?;
    let position: HashMap<TensorId, usize> = candidates
        .iter()
        .enumerate()
        .map(|(i, &t)| (t, i))
        .collect();
    let producers = ort.producers.clone();
    let twin = |name: &str| producers.contains_key(name);
    let inputs_of = |t: TensorId| -> Vec<TensorId> {
        check::unit(&g, t, &twin)
            .inputs
            .into_iter()
            .filter(|i| position.contains_key(i))
            .collect()
    };
    // The arrays of tensors found beyond tolerance (the node found is one of them).
    let mut arrays: HashMap<TensorId, (ArrayD<f32>, ArrayD<f64>)> = HashMap::new();
    let mut round = 0;
    let mut probe = |asked: &[TensorId]| -> Result<Round, CliError> {
        round += 1;
        let names: Vec<String> = asked.iter().map(|&t| g.tensor(t).name.clone()).collect();
        let (exposed, at) = check::exposing(&g, asked);
        // One reference per output of the exposed graph, in its order: the model's
        // outputs, then each probe that was not one already.
        let mut refs = wanted.clone();
        for (&slot, v) in at.iter().zip(ort.values(&names)?) {
            if slot == refs.len() {
                refs.push(v.clone());
            }
        }
        let measured = run_exposed(&exposed, &inputs, &refs, dev, &opts, &target, &mut compiles)?;
        let errors: Vec<f64> = at.iter().map(|&k| measured.checked[k].error).collect();
        for ((&t, &k), &e) in asked.iter().zip(&at).zip(&errors) {
            if e > tol {
                arrays.insert(t, (measured.outputs[k].clone(), refs[k].clone()));
            }
        }
        let output_wrong = measured.checked[j].error > tol;
        let beyond: Vec<usize> = (0..asked.len()).filter(|&i| errors[i] > tol).collect();
        let first = match beyond.first() {
            Some(&i) => format!("; the first beyond it `{}` ({:.2e})", names[i], errors[i]),
            None => String::new(),
        };
        let vanished = if output_wrong {
            ""
        } else {
            "; the output is right in this compile"
        };
        let span: Vec<String> = asked
            .iter()
            .map(|t| (position[t] + 1).to_string())
            .collect();
        outln!(
            "round {round:<3} {} stored (nodes {} of {}): {} within tolerance, {} beyond{first}{vanished}",
            plural(asked.len(), "tensor"),
            span.join(", "),
            position.len(),
            asked.len() - beyond.len(),
            beyond.len()
        )?;
        Ok(Round {
            errors,
            output_wrong,
        })
    };
    let found = check::bisect(&candidates, bad.error, tol, k, &inputs_of, &mut probe)?;
    match found {
        Found::Node {
            tensor,
            error,
            inputs,
        } => {
            let name = report_node(&g, tensor, error, &inputs, tol, &producers, &arrays)?;
            cost(&compiles, &ort, started)?;
            Err(wrong(format!(
                "output `{}` differs from ONNX Runtime's by {:.2e}; the first node whose output differs is `{name}`",
                bad.name, bad.error
            )))
        }
        Found::Vanished { after, upto } => {
            let after = after.map_or("the graph's inputs".to_string(), |t| {
                format!("`{}`", g.tensor(t).name)
            });
            outln!(
                "vanished  with tensors stored the disagreement went away: it lies after {after} and up to `{}`, in how weft fuses the nodes between (`weft model graph` shows the kernels)",
                g.tensor(upto).name
            )?;
            cost(&compiles, &ort, started)?;
            Err(wrong(format!(
                "output `{}` differs from ONNX Runtime's by {:.2e}, between {after} and `{}`",
                bad.name,
                bad.error,
                g.tensor(upto).name
            )))
        }
    }
}

/// `g` compiled, loaded and run on `inputs` through the one measurement path, its
/// outputs checked against `refs`.
fn run_exposed(
    g: &Graph,
    inputs: &[ArrayD<f32>],
    refs: &[ArrayD<f64>],
    dev: &mut dyn Device,
    opts: &CompileOptions,
    target: &Target,
    compiles: &mut Compiles,
) -> Result<Measured, CliError> {
    compiles.count += 1;
    let m = Measure {
        inputs: Some(inputs),
        reference: Reference::Outputs(refs),
        warmup: 0,
        iters: 1,
        whole: false,
        each: false,
    };
    measure(g, dev, opts, &m).map_err(|e| measure_failed(target, e))
}

/// `--expect DIR`: ONNX Runtime's outputs and weft's against the framework's.
fn expect(dir: &Path, g: &Graph, whole: &Measured, ort: &Ort, tol: f64) -> Result<(), CliError> {
    let export_tol = tolerance(EXPORT_TOLERANCE);
    let mut unfaithful = Vec::new();
    // The files `weft model run --save` writes: inputs first, then outputs, one to one.
    let names: Vec<&str> = g
        .inputs
        .iter()
        .chain(&g.outputs)
        .map(|&t| g.tensor(t).name.as_str())
        .collect();
    let files = models::file_names(&names);
    for (k, &t) in g.outputs.iter().enumerate() {
        let tensor = g.tensor(t);
        let file = &files[g.inputs.len() + k];
        let path = dir.join(file);
        if !path.is_file() {
            return Err(ModelFileError::Npy {
                path,
                reason: format!(
                    "not found: --expect takes one .npy file per graph output ({} {} {:?} here)",
                    file, tensor.dtype, tensor.shape
                ),
            }
            .into());
        }
        let framework = npy::read_tensor(&path, &tensor.name, &tensor.shape, tensor.dtype)
            .map_err(|e| {
                CliError::Usage(format!("--expect, graph output `{}`: {e}", tensor.name))
            })?;
        let by_ort = relative_error(&ort.outputs[k].1, &framework);
        let by_weft = relative_error(&whole.outputs[k], &framework);
        outln!(
            "expect    `{}` from {}: ONNX Runtime {:.2e} (tolerance {:.0e}): {}; weft {:.2e} (tolerance {:.0e}): {}",
            tensor.name,
            path.display(),
            by_ort,
            export_tol,
            if by_ort <= export_tol {
                "the export agrees with the framework"
            } else {
                "THE EXPORT DIFFERS from the framework"
            },
            by_weft,
            tol,
            verdict(by_weft, tol)
        )?;
        if by_ort > export_tol {
            unfaithful.push(format!("`{}`", tensor.name));
        }
    }
    if !unfaithful.is_empty() {
        outln!(
            "export    ONNX Runtime on the file differs from the framework at {}: the export is unfaithful to the model, whatever weft does",
            unfaithful.join(", ")
        )?;
    }
    Ok(())
}

/// Prints the node found: its ONNX node with its attributes, the weft nodes it became,
/// its inputs, and both sides' statistics of its output. Returns the node's name.
fn report_node(
    g: &Graph,
    t: TensorId,
    error: f64,
    inputs: &[(TensorId, f64)],
    tol: f64,
    producers: &HashMap<String, Producer>,
    arrays: &HashMap<TensorId, (ArrayD<f32>, ArrayD<f64>)>,
) -> Result<String, CliError> {
    let tensor = g.tensor(t);
    let twin = |name: &str| producers.contains_key(name);
    let unit = check::unit(g, t, &twin);
    let (onnx_name, onnx_op, attributes) = match producers.get(&tensor.name) {
        Some(p) => (p.node.clone(), p.op.clone(), p.attributes.clone()),
        None => (tensor.name.clone(), "?".to_string(), String::new()),
    };
    outln!("first diverging node")?;
    outln!("  node    `{onnx_name}` ({onnx_op} in the file)")?;
    let attributes = if attributes.is_empty() {
        "none".to_string()
    } else {
        attributes
    };
    outln!("  attrs   {attributes}")?;
    for &n in &unit.nodes {
        let node = &g.nodes[n.0];
        outln!("  weft    `{}` = {}", node.name, node.op)?;
    }
    let measured: HashMap<TensorId, f64> = inputs.iter().copied().collect();
    for &i in &unit.inputs {
        let x = g.tensor(i);
        let what = if x.is_constant() {
            "constant".to_string()
        } else if g.inputs.contains(&i) {
            "graph input".to_string()
        } else {
            match measured.get(&i) {
                Some(&e) => format!("{:.2e} from ONNX Runtime's: {}", e, verdict(e, tol)),
                None => "not compared".to_string(),
            }
        };
        outln!("  input   %{}: {} {:?} ({what})", x.name, x.dtype, x.shape)?;
    }
    outln!(
        "  output  %{}: {} {:?}: {:.2e} = max |weft − ORT| / max |ORT| (tolerance {:.0e})",
        tensor.name,
        tensor.dtype,
        tensor.shape,
        error,
        tol
    )?;
    if let Some((weft, ort)) = arrays.get(&t) {
        if weft.shape() != ort.shape() {
            outln!(
                "  shape   weft computes {:?} where ONNX Runtime gives {:?}",
                weft.shape(),
                ort.shape()
            )?;
        }
        let (w, o) = (
            Stats::of(weft.iter().map(|&v| f64::from(v))),
            Stats::of(ort.iter().copied()),
        );
        outln!("          {:>14} {:>14}", "weft", "ONNX Runtime")?;
        outln!("  min     {:>14} {:>14}", num(w.min), num(o.min))?;
        outln!("  max     {:>14} {:>14}", num(w.max), num(o.max))?;
        outln!("  mean    {:>14} {:>14}", num(w.mean), num(o.mean))?;
        outln!("  absmax  {:>14} {:>14}", num(w.absmax), num(o.absmax))?;
        if w.nonfinite + o.nonfinite > 0 {
            outln!("  not finite {:>11} {:>14}", w.nonfinite, o.nonfinite)?;
        }
        if let Some(d) = worst(weft, ort) {
            outln!(
                "  worst   |weft − ORT| {} at {:?} (weft {}, ONNX Runtime {}): {:.2e} of max |ORT|",
                num(d.diff),
                d.index,
                num(d.weft),
                num(d.ort),
                d.diff / o.absmax.max(f64::MIN_POSITIVE)
            )?;
        }
    }
    Ok(onnx_name)
}

/// A tensor's smallest, largest, mean and largest absolute finite value, and how many
/// are not finite.
struct Stats {
    min: f64,
    max: f64,
    mean: f64,
    absmax: f64,
    nonfinite: usize,
}

impl Stats {
    fn of(values: impl Iterator<Item = f64>) -> Stats {
        let (mut min, mut max, mut sum, mut n, mut nonfinite) =
            (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0usize, 0usize);
        for v in values {
            if !v.is_finite() {
                nonfinite += 1;
                continue;
            }
            min = min.min(v);
            max = max.max(v);
            sum += v;
            n += 1;
        }
        let mean = if n == 0 { f64::NAN } else { sum / n as f64 };
        let absmax = if n == 0 {
            f64::NAN
        } else {
            min.abs().max(max.abs())
        };
        Stats {
            min,
            max,
            mean,
            absmax,
            nonfinite,
        }
    }
}

/// The element where weft and ONNX Runtime differ most.
#[derive(Debug, PartialEq)]
struct Worst {
    diff: f64,
    index: Vec<usize>,
    weft: f64,
    ort: f64,
}

/// The largest `|weft − ort|` (infinite where one is not finite and the other differs),
/// the first such element; `None` where the shapes differ.
fn worst(weft: &ArrayD<f32>, ort: &ArrayD<f64>) -> Option<Worst> {
    if weft.shape() != ort.shape() {
        return None;
    }
    let mut best: Option<Worst> = None;
    for ((index, &w), &o) in weft.indexed_iter().zip(ort.iter()) {
        let w = f64::from(w);
        let diff = if w == o || (w.is_nan() && o.is_nan()) {
            0.0
        } else if w.is_finite() && o.is_finite() {
            (w - o).abs()
        } else {
            f64::INFINITY
        };
        if best.as_ref().is_none_or(|b| diff > b.diff) {
            best = Some(Worst {
                diff,
                index: ndarray::Dimension::slice(&index).to_vec(),
                weft: w,
                ort: o,
            });
        }
    }
    best
}

/// A value in 4 decimals where that reads well, else in exponent form.
fn num(v: f64) -> String {
    if v == 0.0 || (v.is_finite() && (1e-3..1e4).contains(&v.abs())) {
        format!("{v:.4}")
    } else {
        format!("{v:.3e}")
    }
}

/// `1 tensor`, `3 tensors`.
fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `ok` or `WRONG`.
fn verdict(error: f64, tolerance: f64) -> &'static str {
    if error <= tolerance { "ok" } else { "WRONG" }
}

/// How the model runs in weft.
fn dtype_text(p: Precision) -> &'static str {
    match p {
        Precision::F32 | Precision::F32ChannelsLast => "f32",
        Precision::F16 => "f16 storage, f32 accumulation (ONNX Runtime in f32)",
    }
}

/// The cost line: compiles, ONNX Runtime runs, the time of it all.
fn cost(compiles: &Compiles, ort: &Ort, started: Instant) -> Result<(), CliError> {
    outln!(
        "cost      {} of the model, {} of ONNX Runtime, {:.1} s in all",
        plural(compiles.count, "compile"),
        plural(ort.runs, "run"),
        started.elapsed().as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    #[test]
    fn the_worst_element_is_found_by_its_index() {
        let weft = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let ort = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1.0, 2.5, 3.0, 3.0]).unwrap();
        let w = worst(&weft, &ort).unwrap();
        assert_eq!((w.diff, w.index.as_slice()), (1.0, &[1usize, 1][..]));
        let mut nan = weft.clone();
        nan[[0, 0]] = f32::NAN;
        assert_eq!(worst(&nan, &ort).unwrap().index, vec![0, 0]);
        let s = Stats::of([1.0, f64::NAN, -3.0].into_iter());
        assert_eq!(
            (s.min, s.max, s.mean, s.absmax, s.nonfinite),
            (-3.0, 1.0, -1.0, 3.0, 1)
        );
    }
}
