//! Whole-model rows of the results page: weft's end-to-end time per model, batch, dtype
//! and target (`weft report --models`), beside baselines measured in the same call by
//! another engine (`--baselines`: the JSON lines `scripts/torch_models.py` prints for
//! PyTorch eager, PyTorch replayed as one CUDA graph, and torch.compile), a table and a
//! chart per model, and each of the project's targets stated as met or missed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::charts::{self, Point};
use crate::error::CliError;
use crate::model_args::{ModelDType, ModelSource};
use crate::model_compile::{bench_one, load};

/// One end-to-end measurement of a model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRow {
    /// `zoo:resnet50`, or a file's path.
    pub model: String,
    pub batch: u32,
    pub resolution: u32,
    /// `f32` or `f16`.
    pub dtype: String,
    /// `weft`, or the baseline's engine and mode (`PyTorch eager`, `PyTorch CUDA graph`,
    /// `torch.compile`).
    pub engine: String,
    /// weft's target string; `cuda` for the PyTorch rows.
    pub target: String,
    pub device: String,
    /// Median time of one run of the whole model, in milliseconds.
    pub ms: f64,
    /// weft's kernels per run, and its compile time in seconds (untuned or from records).
    #[serde(default)]
    pub kernels: Option<usize>,
    #[serde(default)]
    pub compile_s: Option<f64>,
    pub unix_time: u64,
    /// weft's anchors (convolutions and products on a matmul template), and how many of
    /// them took a tuning record's config rather than the stated rule's; `None` for the
    /// baselines and for rows measured before weft reported it (2026-11-27).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchors: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuned: Option<usize>,
}

impl ModelRow {
    fn same(&self, o: &ModelRow) -> bool {
        (
            &self.model,
            self.batch,
            self.resolution,
            &self.dtype,
            &self.engine,
            (&self.target, &self.device),
        ) == (
            &o.model,
            o.batch,
            o.resolution,
            &o.dtype,
            &o.engine,
            (&o.target, &o.device),
        )
    }
}

/// Adds `new` rows; each replaces an earlier row of the same model, batch, resolution,
/// dtype, engine, target and device.
pub(crate) fn merge(rows: &mut Vec<ModelRow>, new: Vec<ModelRow>) {
    for row in new {
        rows.retain(|r| !r.same(&row));
        rows.push(row);
    }
}

/// `zoo:resnet50@8` → (`zoo:resnet50`, 8); no `@` is batch 1.
fn spec(text: &str) -> Result<(String, u32), CliError> {
    match text.rsplit_once('@') {
        Some((model, batch)) => {
            let b: u32 = batch.parse().ok().filter(|&b| b > 0).ok_or_else(|| {
                CliError::Usage(format!(
                    "`{text}`: the batch after `@` must be a positive integer"
                ))
            })?;
            Ok((model.to_string(), b))
        }
        None => Ok((text.to_string(), 1)),
    }
}

/// weft's rows: every model spec × dtype × target (× sequence length, for the
/// transformers: models whose input is token ids), timed as `weft model bench` does.
pub(crate) fn measure(
    models: &[String],
    targets: &[String],
    dtypes: &[ModelDType],
    resolution: Option<u32>,
    seqs: &[u32],
    records: Option<&Path>,
    iters: usize,
) -> Result<Vec<ModelRow>, CliError> {
    let mut rows = Vec::new();
    for text in models {
        let (model, batch) = spec(text)?;
        for &dtype in dtypes {
            // A zoo CNN takes no sequence length (its loader refuses one): the lengths
            // are the transformers' rows, and the other models run once.
            let zoo_cnn = model
                .strip_prefix("zoo:")
                .is_some_and(|name| !weft_graph::zoo::takes_tokens(name));
            let mut lengths: Vec<Option<u32>> = if zoo_cnn {
                Vec::new()
            } else {
                seqs.iter().map(|&s| Some(s)).collect()
            };
            if lengths.is_empty() {
                lengths.push(None);
            }
            for (i, &seq) in lengths.iter().enumerate() {
                let source = ModelSource {
                    model: model.clone(),
                    batch,
                    // A zoo transformer takes no resolution, as a zoo CNN no length.
                    resolution: if zoo_cnn || !model.starts_with("zoo:") {
                        resolution
                    } else {
                        None
                    },
                    seq,
                    disable_pass: Vec::new(),
                    dim: Vec::new(),
                    llama: Default::default(),
                    dtype,
                };
                let g = load(&source)?;
                let tokens = g
                    .inputs
                    .first()
                    .is_some_and(|&t| !g.tensor(t).dtype.is_float());
                if i > 0 && !tokens {
                    // Not a transformer: one row, whatever the lengths.
                    break;
                }
                // A transformer's "resolution" is its sequence length.
                let resolution = g
                    .inputs
                    .first()
                    .and_then(|&t| g.tensor(t).shape.last().copied())
                    .unwrap_or(0) as u32;
                for target in targets {
                    eprintln!("weft: model {text} {} on {target}", dtype_name(dtype));
                    let b = bench_one(&g, &source, target, records, iters, false)?;
                    rows.push(ModelRow {
                        model: model.clone(),
                        batch,
                        resolution,
                        dtype: dtype_name(dtype).into(),
                        engine: "weft".into(),
                        target: b.target.to_string(),
                        device: b.device.clone(),
                        ms: b.whole.median.as_secs_f64() * 1e3,
                        kernels: Some(b.model.kernel_count()),
                        compile_s: Some(b.compile.as_secs_f64()),
                        unix_time: weft_tune::unix_now(),
                        anchors: Some(b.anchors),
                        tuned: Some(b.tuned),
                    });
                }
            }
        }
    }
    Ok(rows)
}

fn dtype_name(d: ModelDType) -> &'static str {
    match d {
        ModelDType::F32 => "f32",
        ModelDType::F16 => "f16",
    }
}

/// Reads baseline rows: one JSON object a line, `{"model", "batch", "resolution",
/// "dtype", "mode", "ms"}` (`scripts/torch_models.py`), measured on `device`.
pub(crate) fn baselines(path: &Path, device: &str) -> Result<Vec<ModelRow>, CliError> {
    #[derive(Deserialize)]
    struct Line {
        model: String,
        batch: u32,
        resolution: u32,
        dtype: String,
        mode: String,
        ms: f64,
    }
    let bad = |reason: String| CliError::ReportInput {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        // Op lines are single kernels' baselines, read by `super::beside`.
        if value.get("op").is_some() {
            continue;
        }
        let l: Line =
            serde_json::from_value(value).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        let engine = match l.mode.as_str() {
            "eager" => "PyTorch eager",
            "cuda-graph" => "PyTorch CUDA graph",
            "torch.compile" => "torch.compile",
            other => return Err(bad(format!("line {}: unknown mode `{other}`", i + 1))),
        };
        rows.push(ModelRow {
            model: format!("zoo:{}", l.model),
            batch: l.batch,
            resolution: l.resolution,
            dtype: l.dtype,
            engine: engine.into(),
            target: "cuda".into(),
            device: device.to_string(),
            ms: l.ms,
            kernels: None,
            compile_s: None,
            unix_time: weft_tune::unix_now(),
            anchors: None,
            tuned: None,
        });
    }
    Ok(rows)
}

/// The "Whole models" section: per model a chart and a table, then the targets.
/// Returns the chart files written.
pub(crate) fn section(
    md: &mut String,
    rows: &[ModelRow],
    out: &Path,
    chart_dir: &Path,
) -> Result<Vec<PathBuf>, CliError> {
    let mut written = Vec::new();
    if rows.is_empty() {
        return Ok(written);
    }
    md.push_str("## Whole models\n\n");
    md.push_str(
        "End to end, batch as named, random weights: weft's time is the kernel time of the \
         whole launch list (a CUDA graph on `cuda`, one command submission on Vulkan), \
         median of timed runs; PyTorch's is CUDA-event time around back-to-back runs, \
         measured in the same call on the same GPU. fp32 runs with TF32 off everywhere; \
         fp16 is fp16 storage with f32 accumulation. The model rows are timed here, not \
         checked: each model's outputs are checked against the float64 reference by its \
         tests and by `weft model run`, and torchvision's own exports against PyTorch by \
         `scripts/torchvision_check.py`.\n\n",
    );
    // One table per model, batch and resolution: rows measured at another resolution
    // are another workload.
    let mut models: Vec<(&str, u32, u32)> = Vec::new();
    for r in rows {
        if !models.contains(&(r.model.as_str(), r.batch, r.resolution)) {
            models.push((r.model.as_str(), r.batch, r.resolution));
        }
    }
    for &(model, batch, res) in &models {
        let of: Vec<&ModelRow> = rows
            .iter()
            .filter(|r| r.model == model && r.batch == batch && r.resolution == res)
            .collect();
        // A zoo transformer's "resolution" is its sequence length.
        let transformer = model
            .strip_prefix("zoo:")
            .is_some_and(weft_graph::zoo::takes_tokens);
        if transformer {
            let _ = writeln!(md, "### {model}, batch {batch}, sequence {res}\n");
        } else {
            let _ = writeln!(md, "### {model}, batch {batch}, {res}²\n");
        }
        let name = format!(
            "{}-b{batch}-{res}",
            model.trim_start_matches("zoo:").replace(['/', '.'], "_")
        );
        let points: Vec<Point> = of
            .iter()
            .map(|r| Point {
                op: name.clone(),
                schedule: if r.engine == "weft" {
                    "weft".into()
                } else {
                    r.engine.clone()
                },
                shape: r.dtype.clone(),
                target: r.target.clone(),
                reference: r.engine != "weft",
                seconds: r.ms / 1e3,
                flops: 0.0,
                bytes: 0.0,
            })
            .collect();
        let files = charts::op_chart(
            &name,
            &points,
            " of the whole model",
            &chart_dir.join(&name),
        )
        .map_err(|e| CliError::Chart(Box::new(e)))?;
        let alt = format!("{model} batch {batch}");
        super::image(md, &files, out, &alt);
        written.extend(files);
        md.push_str("| engine | target | device | f32 | f16 | kernels | compile |\n");
        md.push_str("|---|---|---|---:|---:|---:|---:|\n");
        let mut lines: Vec<(&str, &str, &str)> = Vec::new();
        for r in &of {
            let key = (r.engine.as_str(), r.target.as_str(), r.device.as_str());
            if !lines.contains(&key) {
                lines.push(key);
            }
        }
        for (engine, target, device) in lines {
            let cell = |dtype: &str| -> (String, Option<&ModelRow>) {
                let r = of.iter().find(|r| {
                    (
                        r.engine.as_str(),
                        r.target.as_str(),
                        r.device.as_str(),
                        r.dtype.as_str(),
                    ) == (engine, target, device, dtype)
                });
                (
                    r.map_or("—".into(), |r| format!("{:.3} ms", r.ms)),
                    r.copied(),
                )
            };
            let (f32_ms, a) = cell("f32");
            let (f16_ms, b) = cell("f16");
            let any = a.or(b);
            let _ = writeln!(
                md,
                "| {engine} | {target} | {device} | {f32_ms} | {f16_ms} | {} | {} |",
                any.and_then(|r| r.kernels)
                    .map_or("".into(), |k| k.to_string()),
                any.and_then(|r| r.compile_s)
                    .map_or("".into(), |s| format!("{s:.1} s"))
            );
        }
        md.push('\n');
        schedules(md, &of);
        targets(md, &of);
    }
    Ok(written)
}

/// Where weft's rows of one model got their anchors' configs: the stated rule, or tuning
/// records (`weft model tune`, then `weft report --model-records`). Says nothing for rows
/// measured before weft reported it.
fn schedules(md: &mut String, of: &[&ModelRow]) {
    let known: Vec<(&ModelRow, usize)> = of
        .iter()
        .filter(|r| r.engine == "weft")
        .filter_map(|r| Some((*r, r.tuned?)))
        .collect();
    if known.is_empty() {
        return;
    }
    let tuned: Vec<String> = known
        .iter()
        .filter(|(_, t)| *t > 0)
        .map(|(r, t)| match r.anchors {
            Some(a) => format!("{} {}: {t} of {a}", r.target, r.dtype),
            None => format!("{} {}: {t}", r.target, r.dtype),
        })
        .collect();
    let which = if known.len() == of.iter().filter(|r| r.engine == "weft").count() {
        "weft's rows"
    } else {
        "weft's rows measured since 2026-11-27"
    };
    if tuned.is_empty() {
        let _ = writeln!(
            md,
            "Schedules: {which} take every anchor's config from the stated rule (no tuning records).\n"
        );
    } else {
        let _ = writeln!(
            md,
            "Schedules: anchors with a tuning record's config ({}); every other anchor of {which} by the stated rule.\n",
            tuned.join(", ")
        );
    }
}

/// The project's targets for one model: weft CUDA at least as fast as torch.compile in
/// each dtype, at least 2× PyTorch's CUDA-graph replay, and weft on Vulkan at least half
/// as fast as weft on CUDA. Each GPU's rows are weighed among themselves (a table may
/// hold rows of several: an H100's and an H200's), the GPU named where there are several.
fn targets(md: &mut String, of: &[&ModelRow]) {
    let mut gpus: Vec<&str> = Vec::new();
    for r in of {
        let g = super::gpu(&r.device);
        if !gpus.contains(&g) {
            gpus.push(g);
        }
    }
    let mut lines = Vec::new();
    for g in &gpus {
        let named = if gpus.len() > 1 {
            format!(" ({g})")
        } else {
            String::new()
        };
        let find = |engine: &str, target: &str, dtype: &str| {
            of.iter()
                .find(|r| {
                    r.engine == engine
                        && r.target == target
                        && r.dtype == dtype
                        && super::gpu(&r.device) == *g
                })
                .map(|r| r.ms)
        };
        for dtype in ["f32", "f16"] {
            let Some(weft) = find("weft", "cuda", dtype) else {
                continue;
            };
            let mut check = |what: String, want: f64, ratio: f64| {
                let verdict = if ratio >= want { "met" } else { "missed" };
                lines.push(format!(
                    "- {dtype}{named}: {what}: {ratio:.2}× (target ≥ {want}×) — **{verdict}**"
                ));
            };
            if let Some(tc) = find("torch.compile", "cuda", dtype) {
                check(
                    format!("weft CUDA {weft:.3} ms vs torch.compile {tc:.3} ms"),
                    1.0,
                    tc / weft,
                );
            }
            if let Some(cg) = find("PyTorch CUDA graph", "cuda", dtype) {
                check(
                    format!("weft CUDA {weft:.3} ms vs PyTorch CUDA graph {cg:.3} ms"),
                    2.0,
                    cg / weft,
                );
            }
            if let Some(vk) = find("weft", "vulkan", dtype) {
                check(
                    format!("weft Vulkan {vk:.3} ms vs weft CUDA {weft:.3} ms"),
                    0.5,
                    weft / vk,
                );
            }
        }
    }
    if !lines.is_empty() {
        md.push_str("Targets (speed = the other's time ÷ weft's):\n\n");
        for l in lines {
            md.push_str(&l);
            md.push('\n');
        }
        md.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_a_batch_after_an_at() {
        assert_eq!(spec("zoo:resnet50").unwrap(), ("zoo:resnet50".into(), 1));
        assert_eq!(spec("zoo:resnet50@8").unwrap(), ("zoo:resnet50".into(), 8));
        assert!(spec("zoo:resnet50@0").is_err());
        assert!(spec("zoo:resnet50@x").is_err());
    }

    #[test]
    fn targets_are_stated_met_or_missed() {
        let row = |engine: &str, target: &str, dtype: &str, ms: f64| ModelRow {
            model: "zoo:m".into(),
            batch: 1,
            resolution: 224,
            dtype: dtype.into(),
            engine: engine.into(),
            target: target.into(),
            device: "gpu".into(),
            ms,
            kernels: None,
            compile_s: None,
            unix_time: 0,
            anchors: None,
            tuned: None,
        };
        let rows = [
            row("weft", "cuda", "f16", 0.5),
            row("torch.compile", "cuda", "f16", 0.6),
            row("PyTorch CUDA graph", "cuda", "f16", 0.8),
            row("weft", "vulkan", "f16", 0.9),
        ];
        let of: Vec<&ModelRow> = rows.iter().collect();
        let mut md = String::new();
        targets(&mut md, &of);
        assert!(
            md.contains("vs torch.compile 0.600 ms: 1.20× (target ≥ 1×) — **met**"),
            "{md}"
        );
        assert!(
            md.contains("vs PyTorch CUDA graph 0.800 ms: 1.60× (target ≥ 2×) — **missed**"),
            "{md}"
        );
        assert!(
            md.contains(
                "weft Vulkan 0.900 ms vs weft CUDA 0.500 ms: 0.56× (target ≥ 0.5×) — **met**"
            ),
            "{md}"
        );
        // Rows of two GPUs: each GPU's weighed among its own, the GPU named.
        let on = |r: ModelRow, device: &str| ModelRow {
            device: device.into(),
            ..r
        };
        let two = [
            on(row("weft", "cuda", "f16", 0.5), "NVIDIA H100 (sm_90)"),
            on(
                row("weft", "vulkan", "f16", 1.1),
                "NVIDIA H100 (Vulkan, DiscreteGpu)",
            ),
            on(row("weft", "cuda", "f16", 0.4), "NVIDIA H200 (sm_90)"),
            on(
                row("weft", "vulkan", "f16", 0.8),
                "NVIDIA H200 (Vulkan, DiscreteGpu)",
            ),
        ];
        let of: Vec<&ModelRow> = two.iter().collect();
        let mut md = String::new();
        targets(&mut md, &of);
        assert!(
            md.contains("- f16 (NVIDIA H100): weft Vulkan 1.100 ms vs weft CUDA 0.500 ms: 0.45×"),
            "{md}"
        );
        assert!(
            md.contains("- f16 (NVIDIA H200): weft Vulkan 0.800 ms vs weft CUDA 0.400 ms: 0.50×"),
            "{md}"
        );
        // A later measurement replaces an earlier one of the same row.
        let mut all = vec![row("weft", "cuda", "f16", 0.5)];
        merge(
            &mut all,
            vec![
                row("weft", "cuda", "f16", 0.4),
                row("weft", "cuda", "f32", 1.0),
            ],
        );
        assert_eq!(all.len(), 2);
        assert!(all.iter().any(|r| r.ms == 0.4));
    }

    #[test]
    fn each_table_says_where_the_anchors_configs_came_from() {
        let row = |target: &str, dtype: &str, tuned: Option<usize>| ModelRow {
            model: "zoo:m".into(),
            batch: 8,
            resolution: 224,
            dtype: dtype.into(),
            engine: "weft".into(),
            target: target.into(),
            device: "gpu".into(),
            ms: 1.0,
            kernels: None,
            compile_s: None,
            unix_time: 0,
            anchors: tuned.map(|_| 53),
            tuned,
        };
        let torch = ModelRow {
            engine: "torch.compile".into(),
            ..row("cuda", "f16", None)
        };
        let said = |rows: &[ModelRow]| {
            let of: Vec<&ModelRow> = rows.iter().collect();
            let mut md = String::new();
            schedules(&mut md, &of);
            md
        };
        let rule = said(&[
            row("cuda", "f16", Some(0)),
            row("vulkan", "f16", Some(0)),
            torch.clone(),
        ]);
        assert!(
            rule.contains("weft's rows take every anchor's config from the stated rule"),
            "{rule}"
        );
        let tuned = said(&[row("cuda", "f16", Some(24)), row("vulkan", "f16", Some(0))]);
        assert!(tuned.contains("(cuda f16: 24 of 53)"), "{tuned}");
        assert!(!tuned.contains("vulkan f16:"), "{tuned}");
        // Rows from before the count was kept are not vouched for.
        let mixed = said(&[row("cuda", "f16", Some(0)), row("cuda", "f32", None)]);
        assert!(
            mixed.contains("weft's rows measured since 2026-11-27"),
            "{mixed}"
        );
        assert_eq!(said(&[row("cuda", "f32", None), torch]), "");
    }
}
