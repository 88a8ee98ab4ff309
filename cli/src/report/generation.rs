//! Generation against PyTorch (issue 60): `weft report --generation FILE[,FILE...]` reads
//! the JSON `scripts/generate_check.py --speed` writes (TinyLlama-shaped fp16 decode,
//! weft's `model generate` on each target beside transformers' StaticCache decode step
//! replayed as one CUDA graph, in the same call), keeps each file as a [`GenRun`] in
//! `report.json`, and writes a table and issue 60's three targets, met or missed.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CliError;

/// Issue 60's targets: batch-1 decode at ≥ 75% of the HBM bound (≥ 1,600 tokens/s on an
/// H200), ≥ 4× PyTorch's CUDA-graph decode, Vulkan ≥ 0.5× weft's CUDA.
const BOUND_SHARE: f64 = 0.75;
const H200_TOKENS: f64 = 1600.0;
const OVER_TORCH: f64 = 4.0;
const VULKAN_SHARE: f64 = 0.5;

/// One `generate_check.py --speed` file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenRun {
    /// The file as it was named on the command line.
    pub file: String,
    /// `2026-11-29 12:00 UTC`; `None` in files of the script before it wrote one.
    pub date: Option<String>,
    /// The GPU (`NVIDIA H200`).
    pub device: Option<String>,
    /// `weft --version` of the binary timed.
    pub weft: Option<String>,
    pub torch: Option<String>,
    pub transformers: Option<String>,
    pub command: Option<String>,
    /// The GPU's memory bandwidth in GB/s that the bound is taken from (the script's
    /// table or `--hbm-gbs`).
    pub hbm_gbs: Option<f64>,
    pub rows: Vec<GenRow>,
}

/// weft on one target at one batch and prompt length, beside PyTorch's figure at the
/// same batch and prompt from the same call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenRow {
    pub batch: u32,
    pub prompt: u32,
    pub target: String,
    pub dtype: String,
    pub weft: Decode,
    /// transformers' StaticCache decode step as one CUDA graph; `None` where not run.
    pub torch: Option<Decode>,
}

/// One decode figure, or why there is none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decode {
    /// Device time of one decode step (one token per sequence), in ms.
    pub step_ms: Option<f64>,
    /// Tokens/s of all sequences together, as the script printed it (the page computes
    /// it from the step time: batch ÷ step time).
    pub tok_s_all: Option<f64>,
    /// The bandwidth weft's step reached, GB/s, as `weft model generate` prints it.
    #[serde(default)]
    pub gbs: Option<f64>,
    /// MiB one step reads (weights and cache), as `weft model generate` prints it.
    #[serde(default)]
    pub mib: Option<f64>,
    pub error: Option<String>,
}

impl Decode {
    /// Tokens/s of one sequence.
    fn per_seq(&self) -> Option<f64> {
        self.step_ms.map(|t| 1e3 / t)
    }
}

/// Reads one file of `scripts/generate_check.py --speed`.
pub(crate) fn read(path: &Path) -> Result<GenRun, CliError> {
    let bad = |reason: String| CliError::ReportInput {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let speed = v.get("speed").and_then(Value::as_array).ok_or_else(|| {
        bad("not a `scripts/generate_check.py --speed` file (no `speed` list)".into())
    })?;
    let text_of = |key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let rows = speed
        .iter()
        .enumerate()
        .map(|(i, r)| row(r).map_err(|e| bad(format!("speed row {}: {e}", i + 1))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(GenRun {
        file: path.display().to_string(),
        date: text_of("date"),
        device: text_of("device"),
        weft: text_of("weft"),
        torch: text_of("torch"),
        transformers: text_of("transformers"),
        command: text_of("command"),
        hbm_gbs: v.get("hbm_gbs").and_then(Value::as_f64),
        rows,
    })
}

fn positive(v: Option<&Value>, key: &str) -> Result<Option<f64>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(x) => match x.as_f64() {
            Some(f) if f.is_finite() && f > 0.0 => Ok(Some(f)),
            _ => Err(format!("`{key}` is not a positive number: {x}")),
        },
    }
}

/// `1939.393 GB/s: 2223.6 MiB of weights and 4.1 MiB of cache read per decode step` →
/// (1939.393, 2227.7).
fn bandwidth(text: &str) -> (Option<f64>, Option<f64>) {
    let words: Vec<&str> = text.split_whitespace().collect();
    let gbs = words
        .windows(2)
        .find(|w| w[1].starts_with("GB/s"))
        .and_then(|w| w[0].parse().ok());
    let mib: Vec<f64> = words
        .windows(2)
        .filter(|w| w[1] == "MiB")
        .filter_map(|w| w[0].parse().ok())
        .collect();
    (gbs, (!mib.is_empty()).then(|| mib.iter().sum()))
}

fn decode(v: &Value, is_weft: bool) -> Result<Decode, String> {
    let step_ms = positive(v.get("step_ms"), "step_ms")?;
    let tok_s_all = positive(v.get("tok_s_all"), "tok_s_all")?;
    let (gbs, mib) = match v.get("bandwidth").and_then(Value::as_str) {
        Some(b) if is_weft => bandwidth(b),
        _ => (None, None),
    };
    let error = match (step_ms, v.get("error").and_then(Value::as_str)) {
        (_, Some(e)) => Some(e.to_string()),
        (Some(_), None) => None,
        (None, None) => Some(match (v.get("rc"), v.get("tail").and_then(Value::as_str)) {
            (Some(rc), Some(tail)) => {
                let last = tail
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                format!("exit {rc}: {}", last.trim())
            }
            (Some(rc), None) => format!("exit {rc}, no decode step printed"),
            _ => "no decode step time".into(),
        }),
    };
    Ok(Decode {
        step_ms,
        tok_s_all,
        gbs,
        mib,
        error,
    })
}

fn row(v: &Value) -> Result<GenRow, String> {
    let int = |key: &str| -> Result<u32, String> {
        v.get(key)
            .and_then(Value::as_u64)
            .filter(|&n| n > 0 && n <= u32::MAX as u64)
            .map(|n| n as u32)
            .ok_or_else(|| format!("no positive `{key}`"))
    };
    let target = v
        .get("target")
        .and_then(Value::as_str)
        .ok_or("no `target`")?
        .to_string();
    let weft = decode(v.get("weft").ok_or("no `weft` object")?, true)?;
    let torch = match v.get("torch_cuda_graph") {
        Some(t) if t.as_object().is_some_and(|o| !o.is_empty()) => Some(decode(t, false)?),
        _ => None,
    };
    Ok(GenRow {
        batch: int("batch")?,
        prompt: int("prompt")?,
        target,
        dtype: v
            .get("dtype")
            .and_then(Value::as_str)
            .unwrap_or("f16")
            .to_string(),
        weft,
        torch,
    })
}

/// Adds `new` runs; the same file read twice is kept once.
pub(crate) fn merge(runs: &mut Vec<GenRun>, new: Vec<GenRun>) {
    for run in new {
        let same = |r: &GenRun| {
            (&r.date, &r.device, &r.command, &r.rows)
                == (&run.date, &run.device, &run.command, &run.rows)
        };
        match runs.iter().position(same) {
            Some(i) => runs[i] = run,
            None => runs.push(run),
        }
    }
}

/// A row on the page with its run (index in date order) and that run's bandwidth.
struct Shown<'a> {
    row: &'a GenRow,
    run: usize,
    gpu: &'a str,
    hbm_gbs: Option<f64>,
}

/// The "Generation against PyTorch" section.
pub(crate) fn section(md: &mut String, runs: &[GenRun]) {
    if runs.is_empty() {
        return;
    }
    let mut order: Vec<&GenRun> = runs.iter().collect();
    order.sort_by(|a, b| a.date.cmp(&b.date));
    // A later run's row replaces an earlier one of the same GPU, batch, prompt, target
    // and dtype.
    let mut shown: Vec<Shown> = Vec::new();
    for (i, run) in order.iter().enumerate() {
        let gpu = run.device.as_deref().map_or("GPU not recorded", super::gpu);
        for row in &run.rows {
            let key = |s: &Shown| {
                (
                    s.gpu,
                    s.row.batch,
                    s.row.prompt,
                    &s.row.target,
                    &s.row.dtype,
                ) == (gpu, row.batch, row.prompt, &row.target, &row.dtype)
            };
            shown.retain(|s| !key(s));
            shown.push(Shown {
                row,
                run: i,
                gpu,
                hbm_gbs: run.hbm_gbs,
            });
        }
    }
    shown.sort_by_key(|s| (s.row.batch, s.row.prompt, s.row.target != "cuda"));
    md.push_str("## Generation against PyTorch\n\n");
    md.push_str(
        "TinyLlama-1.1B's shape (22 layers, hidden 2048, 32 heads, 4 KV heads, vocabulary \
         32000; random weights), greedy decode, timed by `scripts/generate_check.py --speed` \
         in one device call per file: `weft model generate zoo:llama --dtype D` (the device \
         time of one decode step, median over the steps) and, in the same call, \
         transformers with a StaticCache, one decode step captured as a CUDA graph and \
         replayed (CUDA events, median). Tokens/s per sequence = 1 ÷ step time; speed = \
         weft's tokens/s ÷ PyTorch's at the same batch and prompt. The HBM bound is the \
         GPU's memory bandwidth ÷ the bytes one of weft's steps reads (weights and cache); \
         where several files measured the same row, the later one's figures are shown.\n\n",
    );
    md.push_str("| run | file | date | GPU | HBM | weft | torch | transformers | command |\n");
    md.push_str("|---|---|---|---|---:|---|---|---|---|\n");
    let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "not recorded".into());
    for (i, r) in order.iter().enumerate() {
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |",
            i + 1,
            r.file,
            or(&r.date),
            or(&r.device),
            r.hbm_gbs
                .map_or("not recorded".into(), |g| format!("{g:.0} GB/s")),
            or(&r.weft),
            or(&r.torch),
            or(&r.transformers),
            r.command
                .as_ref()
                .map_or("not recorded".into(), |c| format!("`{c}`"))
        );
    }
    md.push('\n');
    md.push_str(
        "| GPU | batch | prompt | target | dtype | weft step | weft tokens/s (per sequence, in all) | bandwidth | of the HBM bound | PyTorch step | PyTorch tokens/s (per sequence) | speed | run |\n",
    );
    md.push_str("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    let mut notes = Vec::new();
    for s in &shown {
        let r = s.row;
        let w = &r.weft;
        let (step, tokens) = match (w.step_ms, &w.error) {
            (Some(t), _) => (
                format!("{t:.3} ms"),
                // Both from the step time, so they agree with it and with each other.
                format!("{:.0}, {:.0}", 1e3 / t, r.batch as f64 * 1e3 / t),
            ),
            (None, e) => {
                notes.push(format!(
                    "weft {} batch {} prompt {}: {}",
                    r.target,
                    r.batch,
                    r.prompt,
                    e.as_deref().unwrap_or("no time")
                ));
                (format!("failed [{}]", notes.len()), "—".into())
            }
        };
        let gbs = w.gbs.map_or("—".into(), |g| format!("{g:.0} GB/s"));
        let of_bound = match (bound(s), w.per_seq()) {
            (Some(b), Some(t)) => format!("{:.0}% of {b:.0} tok/s", 100.0 * t / b),
            _ => "—".into(),
        };
        let (tstep, ttok) = match &r.torch {
            Some(Decode {
                step_ms: Some(t), ..
            }) => (format!("{t:.3} ms"), format!("{:.0}", 1e3 / t)),
            Some(Decode { error, .. }) => {
                notes.push(format!(
                    "PyTorch batch {} prompt {}: {}",
                    r.batch,
                    r.prompt,
                    error.as_deref().unwrap_or("no time")
                ));
                (format!("failed [{}]", notes.len()), "—".into())
            }
            None => ("not run".into(), "—".into()),
        };
        let speed = match (w.per_seq(), r.torch.as_ref().and_then(Decode::per_seq)) {
            (Some(a), Some(b)) => format!("**{:.2}×**", a / b),
            _ => "—".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {step} | {tokens} | {gbs} | {of_bound} | {tstep} | {ttok} | {speed} | {} |",
            s.gpu,
            r.batch,
            r.prompt,
            r.target,
            r.dtype,
            s.run + 1
        );
    }
    md.push('\n');
    if !notes.is_empty() {
        md.push_str("Why a figure is missing:\n\n");
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(md, "{}. {}", i + 1, n.replace('\n', " "));
        }
        md.push('\n');
    }
    targets(md, &shown);
}

/// Tokens/s of one sequence at the HBM bound: bandwidth ÷ the bytes one step reads.
fn bound(s: &Shown) -> Option<f64> {
    Some(s.hbm_gbs? * 1e9 / (s.row.weft.mib? * 1024.0 * 1024.0))
}

/// Issue 60's three targets on the fp16 rows, each met or missed with its figure.
fn targets(md: &mut String, shown: &[Shown]) {
    let line = |md: &mut String, what: &str, verdict: &str, figure: String| {
        let _ = writeln!(md, "- {what}: **{verdict}** — {figure}");
    };
    md.push_str("### Issue 60's targets\n\n");
    let f16 = |s: &&Shown| s.row.dtype == "f16";
    let cuda_b1: Vec<&Shown> = shown
        .iter()
        .filter(f16)
        .filter(|s| s.row.target == "cuda" && s.row.batch == 1)
        .collect();

    // ≥ 75% of the HBM bound (≥ 1,600 tokens/s on an H200) at batch 1.
    let what = "batch-1 decode ≥ 75% of the HBM bound (≥ 1,600 tokens/s on an H200)";
    let mut figures = Vec::new();
    let mut missed = false;
    let mut unknown = Vec::new();
    for s in &cuda_b1 {
        let Some(t) = s.row.weft.per_seq() else {
            unknown.push(format!("prompt {}: no weft time", s.row.prompt));
            continue;
        };
        let h200 = s.gpu.contains("H200");
        match bound(s) {
            Some(b) => {
                let want = if h200 {
                    (BOUND_SHARE * b).max(H200_TOKENS)
                } else {
                    BOUND_SHARE * b
                };
                missed |= t < want;
                figures.push(format!(
                    "prompt {}: {t:.0} tok/s = {:.0}% of {b:.0} tok/s (want ≥ {want:.0})",
                    s.row.prompt,
                    100.0 * t / b
                ));
            }
            None if h200 => {
                missed |= t < H200_TOKENS;
                figures.push(format!(
                    "prompt {}: {t:.0} tok/s (want ≥ {H200_TOKENS:.0}; the bound is not known: no HBM bandwidth or bytes per step in the file)",
                    s.row.prompt
                ));
            }
            None => unknown.push(format!(
                "prompt {}: {t:.0} tok/s, but no HBM bandwidth or bytes per step in the file",
                s.row.prompt
            )),
        }
    }
    let verdict = match (figures.is_empty(), missed, unknown.is_empty()) {
        (true, ..) => "not measured",
        (false, true, _) => "missed",
        (false, false, false) => "not measured in full",
        (false, false, true) => "met",
    };
    figures.extend(unknown);
    let figure = match figures.is_empty() {
        true => "no batch-1 CUDA f16 row".into(),
        false => figures.join("; "),
    };
    line(md, what, verdict, figure);

    // ≥ 4× PyTorch's CUDA-graph decode at batch 1.
    let what = "batch-1 decode ≥ 4× PyTorch's StaticCache CUDA graph (same call)";
    let ratios: Vec<(u32, f64, f64, f64)> = cuda_b1
        .iter()
        .filter_map(|s| {
            let w = s.row.weft.per_seq()?;
            let t = s.row.torch.as_ref()?.per_seq()?;
            Some((s.row.prompt, w, t, w / t))
        })
        .collect();
    let figures: Vec<(String, f64)> = ratios
        .iter()
        .map(|(p, w, t, r)| (format!("prompt {p}: {w:.0} vs {t:.0} tok/s = {r:.2}×"), *r))
        .collect();
    ratio_check(
        md,
        what,
        &figures,
        OVER_TORCH,
        "no batch-1 CUDA row has both times",
    );

    // Vulkan ≥ 0.5× weft's CUDA, at each batch and prompt both ran.
    let what = "Vulkan ≥ 0.5× weft's CUDA";
    let mut pairs = Vec::new();
    for v in shown
        .iter()
        .filter(f16)
        .filter(|s| s.row.target == "vulkan")
    {
        let c = shown.iter().filter(f16).find(|s| {
            (s.gpu, s.row.batch, s.row.prompt, s.row.target.as_str())
                == (v.gpu, v.row.batch, v.row.prompt, "cuda")
        });
        if let (Some(vt), Some(ct)) = (v.row.weft.per_seq(), c.and_then(|c| c.row.weft.per_seq())) {
            pairs.push((v.row.batch, v.row.prompt, vt, ct, vt / ct));
        }
    }
    let figures: Vec<(String, f64)> = pairs
        .iter()
        .map(|(b, p, v, c, r)| {
            let text = format!("batch {b} prompt {p}: {v:.0} vs {c:.0} tok/s = {r:.2}×");
            (text, *r)
        })
        .collect();
    ratio_check(
        md,
        what,
        &figures,
        VULKAN_SHARE,
        "no batch and prompt with both a Vulkan and a CUDA time",
    );
    md.push('\n');
}

/// A check over ratios (each with its figure's text): not measured where there are none,
/// missed where any is below `bar`, met otherwise.
fn ratio_check(md: &mut String, what: &str, figures: &[(String, f64)], bar: f64, none: &str) {
    if figures.is_empty() {
        return super::verdict_line(md, what, "not measured", none);
    }
    let missed = figures.iter().any(|(_, r)| *r < bar);
    let texts: Vec<&str> = figures.iter().map(|(t, _)| t.as_str()).collect();
    let verdict = if missed { "missed" } else { "met" };
    super::verdict_line(md, what, verdict, &texts.join("; "));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_lines_give_the_rate_and_the_bytes_of_a_step() {
        let (g, m) = bandwidth(
            "1939.393 GB/s: 2223.6 MiB of weights and 4.1 MiB of cache read per decode step",
        );
        assert_eq!(g, Some(1939.393));
        assert!((m.unwrap() - 2227.7).abs() < 1e-9);
        assert_eq!(bandwidth("none"), (None, None));
    }
}
