//! `weft sweep`: over a set of shapes ([`crate::sweep`]), time the config the template's
//! rule picks with no record, the best config a tuning at that shape finds (a sample of
//! the space, with the rule's and the fixed configs always in it), fixed configs as they
//! are, and the vendor library, all in one process on one device; print a row per shape
//! and a summary, and write the sweep as JSON (whole, after every shape) for
//! `weft report --sweeps`.

use std::path::Path;
use std::time::Duration;

use weft_kernels::Config;
use weft_ops::templates::TemplateSpec;
use weft_ops::{Shape, Workload};
use weft_runtime::Target;
use weft_runtime::WgpuOptions;
use weft_runtime::reference::CudaReference;
use weft_tune::{Outcome, TuneOptions, Tuned};

use crate::args::SweepArgs;
use crate::error::CliError;
use crate::format::{fmt_ratio, fmt_sig, fmt_time};
use crate::out::outln;
use crate::references::{self, Vendor};
use crate::select;
use crate::sweep::{self, Sweep, SweepRow, Timed};

/// Runs the command.
pub fn sweep(a: &SweepArgs) -> Result<(), CliError> {
    let op = weft_ops::find(&a.op)?;
    let bad = |reason: String| CliError::Sweep { reason };
    // `mixed` and `cubes:` are products (m, n, k), `resnet50` convolutions; other ops with
    // a template take their shapes as a list.
    let products = matches!(op.name, "matmul" | "matmul-f16");
    let grouped = sweep::GROUPED_OPS.contains(&op.name);
    if !grouped && a.shapes == sweep::GROUPED {
        return Err(bad(format!(
            "`{}` is a set of grouped convolutions ({}); `{}` is not one",
            a.shapes,
            sweep::GROUPED_OPS.join(", "),
            op.name
        )));
    }
    let skinny = matches!(
        op.name,
        "gemv" | "gemv-f16" | "gemv-kmajor" | "gemv-kmajor-f16"
    );
    // The decode step's attention: GB/s printed (K and V are most of the bytes), and the
    // split-KV rule timed beside the one-kernel rule.
    let attention = op.name == "attention-f16";
    // The ops cuDNN runs beside.
    let convs = sweep::CONV_OPS.contains(&op.name) || grouped;
    let depthwise = sweep::DEPTHWISE_OPS.contains(&op.name);
    if !products && (a.shapes == "mixed" || a.shapes.starts_with("cubes:"))
        || !(products || skinny || attention) && a.shapes == "llama-decode"
    {
        return Err(bad(format!(
            "`{}` is a set of matmul shapes; give `{}`'s shapes as a list (`NAME=V,...;...`)",
            a.shapes, op.name
        )));
    }
    if !sweep::CONV_OPS.contains(&op.name) && a.shapes == sweep::RESNET50 {
        return Err(bad(format!(
            "`{}` is a set of convolutions ({}); `{}` is not one",
            a.shapes,
            sweep::CONV_OPS.join(", "),
            op.name
        )));
    }
    if !depthwise && a.shapes == sweep::DEPTHWISE {
        return Err(bad(format!(
            "`{}` is a set of depthwise convolutions ({}); `{}` is not one",
            a.shapes,
            sweep::DEPTHWISE_OPS.join(", "),
            op.name
        )));
    }
    let spec = op
        .template
        .ok_or_else(|| bad(format!("`{}` has no template", op.name)))?;
    let target = Target::parse(&a.target)?;
    let mut texts = if a.shapes == sweep::RESNET50 {
        sweep::resnet50_convs().map_err(bad)?
    } else if a.shapes == sweep::GROUPED {
        sweep::grouped_convs()
    } else if a.shapes == sweep::DEPTHWISE {
        sweep::depthwise_shapes()
    } else if attention && a.shapes == "llama-decode" {
        sweep::llama_decode_attention()
    } else {
        sweep::shapes(&a.shapes).map_err(bad)?
    };
    if let Some(which) = &a.part {
        texts = sweep::part(&texts, which).map_err(bad)?;
    }
    let shapes: Vec<Shape> = texts
        .iter()
        .map(|t| Shape::parse(op.name, t))
        .collect::<Result<_, _>>()?;
    let mut opened = select::open(&target, WgpuOptions::default())?;
    let device = opened.device.name();
    let limits = opened.device.limits();
    let (fixed, fixed_names) = fixed_configs(spec, &limits, &a.fixed)?;
    let only = match &a.only {
        Some(text) => {
            Config::parse(text)
                .map_err(|e| bad(format!("--only `{text}`: {e}")))?
                .0
        }
        None => Vec::new(),
    };
    // The vendor call beside each shape where there is one: cuBLAS for the products,
    // cuDNN for the convolutions (grouped, for the depthwise ones).
    let mut reference = match target {
        Target::Cuda { .. } if products || skinny || convs || depthwise => {
            match CudaReference::open(&target) {
                Ok(r) => Some(r),
                Err(e) => {
                    eprintln!("weft: no CUDA reference library: {e}");
                    None
                }
            }
        }
        _ => None,
    };
    // The vendor call's name (`cublas-hgemm`, `cudnn-fp16-nhwc`): the op's, the same at
    // every shape.
    let vendor_name = shapes
        .first()
        .and_then(|s| Workload::new(op.name, s).ok())
        .and_then(|w| Vendor::of(&w))
        .map(|v| v.label());
    let mut out = Sweep {
        shapes: a.shapes.clone(),
        part: a.part.clone(),
        op: op.name.to_string(),
        target: target.to_string(),
        device: device.clone(),
        reference: reference.as_ref().and(vendor_name.clone()),
        sample: a.sample as usize,
        fixed: fixed_names.clone(),
        only: a.only.clone(),
        commit: crate::COMMIT.to_string(),
        unix_time: weft_tune::unix_now(),
        rows: Vec::new(),
    };
    outln!(
        "sweep of {}/{} over {} shapes on {target} ({device}): the rule's config (no record), \
         the best of {} configs of the space tuned at each shape{}{}",
        op.name,
        spec.schedule,
        shapes.len(),
        a.sample,
        fixed_names
            .iter()
            .map(|n| format!(", {n}"))
            .collect::<String>(),
        out.reference
            .as_ref()
            .map(|name| format!(", {name}"))
            .unwrap_or_default()
    )?;
    for (shape, text) in shapes.iter().zip(&texts) {
        let w = Workload::new(op.name, shape)?;
        let (rule, why) = spec.untuned(&limits, shape);
        let unsplit = (attention && rule.get(weft_kernels::split_k::PARAM.0).is_some())
            .then(|| unsplit_attention(&limits, shape));
        let opts = TuneOptions {
            sample: Some(a.sample as usize),
            extra: fixed.iter().chain(&unsplit).cloned().collect(),
            budget: Duration::from_millis(a.budget_ms as u64),
            only: only.clone(),
            ..TuneOptions::default()
        };
        let tuned = weft_tune::tune(opened.device.as_mut(), &w, spec, &limits, &opts, &())?;
        let reference_ms = reference
            .as_mut()
            .and_then(|r| vendor(r, &w))
            .and_then(Result::ok);
        let row = SweepRow {
            shape: text.clone(),
            flops: w.flops,
            bytes: (skinny || attention).then_some(w.bytes),
            reference_ms,
            rule: timed(&tuned, &rule),
            rule_why: why,
            tuned: (a.sample > 0).then(|| best(&tuned)),
            fixed: fixed.iter().map(|c| timed(&tuned, c)).collect(),
            timed: tuned.trials.len(),
            trials: if a.trials {
                tuned
                    .trials
                    .iter()
                    .map(|t| of_outcome(&t.config, &t.outcome))
                    .collect()
            } else {
                Vec::new()
            },
            unsplit: unsplit.as_ref().map(|c| timed(&tuned, c)),
        };
        outln!("{}", line(&row, out.reference.as_deref()))?;
        out.rows.push(row);
        if let Some(path) = &a.json {
            write(&out, path)?;
        }
    }
    for l in sweep::summary(&out) {
        outln!("{l}")?;
    }
    Ok(())
}

/// The attention's one-kernel rule at `shape` (what its split-KV rule is timed beside).
fn unsplit_attention(limits: &weft_codegen_common::TargetLimits, shape: &Shape) -> Config {
    let g = |n: &str| shape.get(n);
    let masking = if g("causal") != 0 {
        weft_kernels::attention::Masking::Causal
    } else {
        weft_kernels::attention::Masking::None
    };
    weft_kernels::attention::op_rule_whole(limits, (g("bh"), g("s"), g("t"), g("d")), masking).0
}

/// The `--fixed` configs with what each is: `default` is the template's fixed default for
/// the target (what every shape ran before the rule), anything else a config given whole.
fn fixed_configs(
    spec: &TemplateSpec,
    limits: &weft_codegen_common::TargetLimits,
    given: &[String],
) -> Result<(Vec<Config>, Vec<String>), CliError> {
    let mut configs = Vec::new();
    let mut names = Vec::new();
    for text in given.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
        let (config, name) = match text.split_once(':') {
            _ if text == "default" => (
                (spec.default)(limits),
                "the template's fixed default".to_string(),
            ),
            Some((name, config)) => (parse(spec, config)?, name.trim().to_string()),
            None => (parse(spec, text)?, format!("fixed {text}")),
        };
        configs.push(config);
        names.push(name);
    }
    Ok((configs, names))
}

/// A whole config of `spec`, checked.
fn parse(spec: &TemplateSpec, text: &str) -> Result<Config, CliError> {
    let bad = |reason: String| CliError::Sweep {
        reason: format!("--fixed `{text}`: {reason}"),
    };
    let config = Config::parse(text).map_err(bad)?;
    (spec.describe)(&config).map_err(bad)?;
    Ok(config)
}

/// The vendor call's name for `op`.
/// The vendor library's median kernel time at `w`'s shape, in ms (`None` where the vendor
/// has no call for the op).
fn vendor(
    r: &mut CudaReference,
    w: &Workload,
) -> Option<Result<f64, weft_runtime::reference::ReferenceError>> {
    let v = Vendor::of(w)?;
    let inputs = w.random_inputs(0);
    Some(
        references::call(&v, w, &inputs, r, (3, 20))
            .map(|(_, timing, _)| timing.median.as_secs_f64() * 1e3),
    )
}

/// What `config` did in `tuned`.
fn timed(tuned: &Tuned, config: &Config) -> Timed {
    match tuned.trials.iter().find(|t| t.config == *config) {
        Some(t) => of_outcome(config, &t.outcome),
        None => Timed {
            config: config.to_string(),
            ms: None,
            note: Some("not timed".into()),
        },
    }
}

fn of_outcome(config: &Config, outcome: &Outcome) -> Timed {
    let (ms, note) = match outcome {
        Outcome::Timed { timing, error } => (
            Some(timing.median.as_secs_f64() * 1e3),
            error
                .is_none()
                .then(|| "not checked (slower than the checked ones)".to_string()),
        ),
        Outcome::Wrong { error } => (None, Some(format!("wrong: {error:.3} of the tolerance"))),
        Outcome::Failed(why) => (None, Some(why.clone())),
    };
    Timed {
        config: config.to_string(),
        ms,
        note,
    }
}

/// The fastest right config of the tuning.
fn best(tuned: &Tuned) -> Timed {
    match tuned.best() {
        Some(t) => of_outcome(&t.config, &t.outcome),
        None => Timed {
            config: String::new(),
            ms: None,
            note: Some("no config ran right".into()),
        },
    }
}

/// One printed row: the shape, the rule's and the tuned time, their ratio, the fixed
/// configs' and the vendor call's (`vendor`) times.
fn line(row: &SweepRow, vendor: Option<&str>) -> String {
    let t = |ms: Option<f64>| ms.map_or("-".into(), |v| fmt_time(Duration::from_secs_f64(v / 1e3)));
    // GB/s beside a time where the op is memory-bound (bytes ÷ time).
    let gbps = |ms: Option<f64>| match (row.bytes, ms) {
        (Some(b), Some(ms)) if ms > 0.0 => format!(" ({} GB/s)", fmt_sig(b / (ms / 1e3) / 1e9)),
        _ => String::new(),
    };
    let mut s = format!(
        "{:<24} rule {:>10}{}",
        row.shape,
        t(row.rule.ms),
        gbps(row.rule.ms)
    );
    if let Some(tuned) = &row.tuned {
        s += &format!("  tuned {:>10}{}", t(tuned.ms), gbps(tuned.ms));
        if let (Some(r), Some(b)) = (row.rule.ms, tuned.ms) {
            s += &format!(" (rule {} of tuned)", fmt_ratio(b / r));
        }
    }
    for f in &row.fixed {
        s += &format!("  fixed {:>10}", t(f.ms));
    }
    if let Some(u) = &row.unsplit {
        s += &format!("  unsplit {:>10}{}", t(u.ms), gbps(u.ms));
        if let (Some(r), Some(u)) = (row.rule.ms, u.ms) {
            s += &format!(" (split: {} the speed)", fmt_ratio(u / r));
        }
    }
    if let Some(r) = row.reference_ms {
        let name = vendor.unwrap_or("vendor");
        s += &format!("  {name} {:>10}{}", t(Some(r)), gbps(Some(r)));
    }
    s
}

/// Writes the sweep whole (a temporary file, then a rename).
fn write(s: &Sweep, path: &Path) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(s).map_err(|e| CliError::Sweep {
        reason: e.to_string(),
    })?;
    weft_tune::write_whole(path, text.as_bytes()).map_err(|source| CliError::Io {
        path: path.to_path_buf(),
        source,
    })
}
