//! The "Corpus against PyTorch" section of the results page, from the `--corpus` runs
//! ([`super::corpus`]): where the figures came from, per GPU and batch a table, the
//! geometric mean of weft's speed over torch.compile, one chart of that speed across the
//! corpus, and each "Done when" check of issue 59 stated as met or missed with its figure.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::corpus::{Column, CorpusRun, Merged, is_cnn, merged};
use super::models::ModelRow;
use crate::charts::{self, Ratios};
use crate::error::CliError;

/// The chart's file name in the chart folder (without `.svg`).
pub(crate) const CHART: &str = "corpus-speed";

/// The geometric mean the corpus must reach at batch 1, and the share of models at least
/// as fast as torch.compile at batch 8 (issue 59's "Done when").
const MEAN_TARGET: f64 = 1.3;
const BATCH8_SHARE: f64 = 0.9;

/// The architectures both in weft's zoo and in the corpus (as exported by torchvision or
/// Hugging Face), with the zoo's resolution (its sequence length for the transformers)
/// that matches the corpus's inputs: their times should agree within 10%.
const ZOO_PAIRS: [(&str, u32); 5] = [
    ("bert_base", 128),
    ("gpt2", 128),
    ("resnet50", 224),
    ("mobilenet_v2", 224),
    ("inception_v3", 299),
];

/// Writes the section; returns the chart written. `zoo` are the whole-model rows (weft's
/// zoo models measured by `--models`) the zoo-against-export check reads.
pub(crate) fn section(
    md: &mut String,
    runs: &[CorpusRun],
    zoo: &[ModelRow],
    out: &Path,
    chart_dir: &Path,
) -> Result<Vec<PathBuf>, CliError> {
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let (order, rows) = merged(runs);
    md.push_str("## Corpus against PyTorch\n\n");
    md.push_str(
        "The models people export (issue 59's corpus: torchvision CNNs, Hugging Face \
         encoders and decoders at sequence 128; random weights), timed by \
         `scripts/speed.py` in one device call per file: PyTorch fp16 eager, eager \
         replayed as one CUDA graph, torch.compile (`mode=\"reduce-overhead\"`) and \
         Inductor's kernels captured into one CUDA graph by hand (CUDA events around 20 \
         back-to-back calls, median of 10), then `weft model run FILE --target T --dtype D` \
         on the same ONNX file (median kernel time of the whole model). The bar is the \
         faster of the two torch.compile times; speed = the bar ÷ weft's CUDA f16 time. \
         Where several files measured the same model, batch and column on the same GPU, \
         the later one's figure is shown (the run column names where each row's figures \
         came from).\n\n",
    );
    md.push_str("| run | file | date | GPU | weft | torch | transformers | command |\n");
    md.push_str("|---|---|---|---|---|---|---|---|\n");
    let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "not recorded".into());
    for (i, r) in order.iter().enumerate() {
        let _ = writeln!(
            md,
            "| {} | `{}` | {} | {} | {} | {} | {} | {} |",
            i + 1,
            r.file,
            or(&r.date),
            or(&r.gpu),
            or(&r.weft),
            or(&r.torch),
            or(&r.transformers),
            r.command
                .as_ref()
                .map_or("not recorded".into(), |c| format!("`{c}`"))
        );
    }
    md.push('\n');
    let gpus = distinct(rows.iter().map(|m| m.gpu));
    let mut notes = Vec::new();
    for &gpu in &gpus {
        for batch in distinct(rows.iter().filter(|m| m.gpu == gpu).map(|m| m.batch)) {
            let of: Vec<&Merged> = rows
                .iter()
                .filter(|m| m.gpu == gpu && m.batch == batch)
                .collect();
            table(md, gpu, batch, &of, &mut notes);
        }
    }
    if !notes.is_empty() {
        md.push_str("Why a figure is missing:\n\n");
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(md, "{}. {n}", i + 1);
        }
        md.push('\n');
    }
    let written = chart(md, &rows, &gpus, out, chart_dir)?;
    for &gpu in &gpus {
        let of: Vec<&Merged> = rows.iter().filter(|m| m.gpu == gpu).collect();
        checks(md, gpu, gpus.len() > 1, &of, zoo);
    }
    Ok(written)
}

/// Distinct values in first-seen order.
fn distinct<T: PartialEq + Copy>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut seen = Vec::new();
    for i in items {
        if !seen.contains(&i) {
            seen.push(i);
        }
    }
    seen
}

fn ms(v: f64) -> String {
    format!("{v:.3} ms")
}

/// One GPU's table at one batch, then its mean. Errors become numbered notes.
fn table(md: &mut String, gpu: &str, batch: u32, of: &[&Merged], notes: &mut Vec<String>) {
    let _ = writeln!(md, "### {gpu}, batch {batch}\n");
    let mut columns = vec![
        Column::Eager,
        Column::CudaGraph,
        Column::TorchCompile,
        Column::InductorGraph,
    ];
    let mut weft: Vec<Column> = of
        .iter()
        .flat_map(|m| m.cells.iter().map(|s| s.cell.column.clone()))
        .filter(|c| matches!(c, Column::Weft { .. }))
        .collect();
    weft.sort();
    weft.dedup();
    columns.extend(weft);
    md.push_str("| model | export |");
    for c in &columns {
        let _ = write!(md, " {} |", c.heading());
    }
    md.push_str(" speed | run |\n|---|---|");
    md.push_str(&"---:|".repeat(columns.len() + 1));
    md.push_str("---|\n");
    let mut speeds = Vec::new();
    let mut unmeasured = Vec::new();
    for m in of {
        if m.cells.is_empty() {
            // A model that failed before anything was timed: one cell says so.
            let (error, run) = m.error.unwrap_or(("no figures", 0));
            notes.push(format!(
                "{} batch {batch}, run {}: failed: {}",
                m.model,
                run + 1,
                error.replace('\n', " ")
            ));
            let _ = writeln!(md, "| {} | failed [{}] |", m.model, notes.len());
            unmeasured.push(m.model);
            continue;
        }
        // A later run in which the model failed: its figures are earlier runs'.
        let failed = match m.error {
            Some((error, run)) => {
                notes.push(format!(
                    "{} batch {batch}, run {}: failed (the figures shown are earlier runs'): {}",
                    m.model,
                    run + 1,
                    error.replace('\n', " ")
                ));
                format!(" (failed in run {} [{}])", run + 1, notes.len())
            }
            None => String::new(),
        };
        let _ = write!(
            md,
            "| {}{failed} | {} |",
            m.model,
            m.exporter.unwrap_or("-")
        );
        for c in &columns {
            let cell = match m.get(c) {
                Some(cell) => match (cell.ms, &cell.error) {
                    (Some(t), _) => ms(t),
                    (None, error) => {
                        let why = error.as_deref().unwrap_or("no time").replace('\n', " ");
                        notes.push(format!("{} batch {batch}, {}: {why}", m.model, c.heading()));
                        let word = if matches!(c, Column::Weft { .. }) {
                            "refused"
                        } else {
                            "failed"
                        };
                        format!("{word} [{}]", notes.len())
                    }
                },
                None => "—".into(),
            };
            let _ = write!(md, " {cell} |");
        }
        let speed = match m.speed() {
            Some(s) => {
                speeds.push(s);
                format!("**{s:.2}×**")
            }
            None => {
                unmeasured.push(m.model);
                "—".into()
            }
        };
        let runs = distinct(m.cells.iter().map(|s| s.run + 1));
        let runs: Vec<String> = runs.iter().map(|r| r.to_string()).collect();
        let _ = writeln!(md, " {speed} | {} |", runs.join(", "));
    }
    md.push('\n');
    if let Some(g) = geomean(&speeds) {
        let at_least = speeds.iter().filter(|&&s| s >= 1.0).count();
        let _ = write!(
            md,
            "Geometric mean of weft CUDA f16's speed over torch.compile across {} models: \
             **{g:.2}×**; at least as fast on {at_least} of {}.",
            speeds.len(),
            speeds.len()
        );
    } else {
        md.push_str("No model has both weft's CUDA f16 time and a torch.compile time.");
    }
    if !unmeasured.is_empty() {
        let _ = write!(
            md,
            " Not in the mean (no weft CUDA f16 time or no torch.compile time): {}.",
            unmeasured.join(", ")
        );
    }
    md.push_str("\n\n");
}

fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// The one chart: weft CUDA f16's speed over torch.compile per model, a bar per batch
/// (and GPU, where there are several), marks at 1× and at the mean's target.
fn chart(
    md: &mut String,
    rows: &[Merged],
    gpus: &[&str],
    out: &Path,
    chart_dir: &Path,
) -> Result<Vec<PathBuf>, CliError> {
    let mut series: Vec<(&str, u32)> = Vec::new();
    for m in rows.iter().filter(|m| m.speed().is_some()) {
        if !series.contains(&(m.gpu, m.batch)) {
            series.push((m.gpu, m.batch));
        }
    }
    series.sort_by_key(|&(g, b)| (gpus.iter().position(|x| *x == g), b));
    let mut items: Vec<(String, Vec<(usize, f64)>)> = Vec::new();
    for m in rows {
        let Some(s) = m.speed() else { continue };
        let si = series
            .iter()
            .position(|&k| k == (m.gpu, m.batch))
            .expect("every series was collected from these rows");
        match items.iter_mut().find(|(name, _)| name == m.model) {
            Some((_, bars)) => bars.push((si, s)),
            None => items.push((m.model.to_string(), vec![(si, s)])),
        }
    }
    for (_, bars) in &mut items {
        bars.sort_by_key(|b| b.0);
    }
    let names = series
        .iter()
        .map(|&(g, b)| match gpus.len() {
            1 => format!("batch {b}"),
            _ => format!("batch {b} on {g}"),
        })
        .collect();
    let r = Ratios {
        title: "weft CUDA f16 over torch.compile, fp16, across the corpus".into(),
        axis: "speed = torch.compile's time ÷ weft's (log scale)".into(),
        series: names,
        items,
        marks: vec![
            (1.0, "1× (as fast)".into()),
            (MEAN_TARGET, format!("{MEAN_TARGET}× (the mean's target)")),
        ],
    };
    let files =
        charts::ratios(&r, &chart_dir.join(CHART)).map_err(|e| CliError::Chart(Box::new(e)))?;
    super::image(
        md,
        &files,
        out,
        "weft's speed over torch.compile across the corpus",
    );
    Ok(files)
}

use super::verdict_line as line;

/// `name x.xx×` for each miss, slowest first.
fn misses(mut v: Vec<(String, f64)>) -> String {
    v.sort_by(|a, b| a.1.total_cmp(&b.1));
    let v: Vec<String> = v.iter().map(|(n, r)| format!("{n} {r:.2}×")).collect();
    v.join(", ")
}

/// Issue 59's "Done when", each met or missed with the figure, on one GPU's rows.
fn checks(md: &mut String, gpu: &str, named: bool, of: &[&Merged], zoo: &[ModelRow]) {
    let on = if named {
        format!(" ({gpu})")
    } else {
        String::new()
    };
    let _ = writeln!(md, "### Issue 59's targets{on}\n");
    md.push_str("Speed = the other's time ÷ weft's; a check without figures says so.\n\n");
    let at = |b: u32| -> Vec<&&Merged> { of.iter().filter(|m| m.batch == b).collect() };

    // Every model at batch 1, fp16, at least as fast as torch.compile; and the mean.
    let b1 = at(1);
    let speeds: Vec<(String, f64)> = b1
        .iter()
        .filter_map(|m| Some((m.model.to_string(), m.speed()?)))
        .collect();
    let without: Vec<&str> = b1
        .iter()
        .filter(|m| m.speed().is_none())
        .map(|m| m.model)
        .collect();
    let what = "every model, batch 1, fp16: weft CUDA ≥ 1× torch.compile";
    if speeds.is_empty() {
        line(md, what, "not measured", "no batch-1 model has both times");
    } else {
        let slow: Vec<(String, f64)> = speeds.iter().filter(|s| s.1 < 1.0).cloned().collect();
        let mut figure = format!(
            "{} of {} at least 1×",
            speeds.len() - slow.len(),
            speeds.len()
        );
        if !slow.is_empty() {
            let _ = write!(figure, "; slower: {}", misses(slow.clone()));
        }
        if !without.is_empty() {
            let _ = write!(figure, "; not measured: {}", without.join(", "));
        }
        let verdict = match (slow.is_empty(), without.is_empty()) {
            (false, _) => "missed",
            (true, false) => "not measured in full",
            (true, true) => "met",
        };
        line(md, what, verdict, &figure);
    }
    let values: Vec<f64> = speeds.iter().map(|s| s.1).collect();
    let what = format!("geometric mean at batch 1 ≥ {MEAN_TARGET}×");
    match geomean(&values) {
        Some(g) => {
            let verdict = if g >= MEAN_TARGET { "met" } else { "missed" };
            line(
                md,
                &what,
                verdict,
                &format!("{g:.2}× over {} models", values.len()),
            );
        }
        None => line(md, &what, "not measured", "no batch-1 model has both times"),
    }

    // Batch 8: at least 1× on 90% of the models.
    let b8: Vec<(String, f64)> = at(8)
        .iter()
        .filter_map(|m| Some((m.model.to_string(), m.speed()?)))
        .collect();
    let what = "batch 8, fp16: weft CUDA ≥ 1× torch.compile on 90% of the models";
    if b8.is_empty() {
        line(md, what, "not measured", "no batch-8 model has both times");
    } else {
        let slow: Vec<(String, f64)> = b8.iter().filter(|s| s.1 < 1.0).cloned().collect();
        let share = (b8.len() - slow.len()) as f64 / b8.len() as f64;
        let verdict = if share >= BATCH8_SHARE {
            "met"
        } else {
            "missed"
        };
        let mut figure = format!(
            "{} of {} ({:.0}%)",
            b8.len() - slow.len(),
            b8.len(),
            share * 100.0
        );
        if !slow.is_empty() {
            let _ = write!(figure, "; slower: {}", misses(slow));
        }
        line(md, what, verdict, &figure);
    }

    zoo_check(md, gpu, of, zoo);

    // No model slower on CUDA than on Vulkan; none slower in f16 than in f32; Vulkan at
    // least half of CUDA on the CNNs.
    let pairs = |a: &Column, b: &Column, only: &dyn Fn(&Merged) -> bool| {
        of.iter()
            .filter(|m| only(m))
            .filter_map(|m| Some((m, m.ms(a)?, m.ms(b)?)))
            .collect::<Vec<_>>()
    };
    let all: &dyn Fn(&Merged) -> bool = &|_| true;
    let cnn: &dyn Fn(&Merged) -> bool = &is_cnn;
    let mut lines = Vec::new();
    for (what, a, b, want, only) in [
        (
            "no model slower on CUDA than on Vulkan (f16)",
            "cuda f16",
            "vulkan f16",
            1.0,
            all,
        ),
        (
            "no model slower on CUDA than on Vulkan (f32)",
            "cuda f32",
            "vulkan f32",
            1.0,
            all,
        ),
        (
            "no model slower in f16 than in f32 (CUDA)",
            "cuda f16",
            "cuda f32",
            1.0,
            all,
        ),
        (
            "no model slower in f16 than in f32 (Vulkan)",
            "vulkan f16",
            "vulkan f32",
            1.0,
            all,
        ),
        (
            "Vulkan ≥ 0.5× CUDA on the CNNs (f16)",
            "vulkan f16",
            "cuda f16",
            0.5,
            cnn,
        ),
    ] {
        let col = |s: &str| {
            let (t, d) = s.split_once(' ').expect("a target and a dtype");
            Column::weft(t, d)
        };
        // speed of `a` against `b`: b's time ÷ a's.
        let got = pairs(&col(a), &col(b), only);
        if got.is_empty() {
            lines.push((
                what,
                "not measured".to_string(),
                format!("no model has weft {a} and {b}"),
            ));
            continue;
        }
        let slow: Vec<(String, f64)> = got
            .iter()
            .filter(|(_, ta, tb)| tb / ta < want)
            .map(|(m, ta, tb)| {
                (
                    format!("{} batch {} ({} vs {})", m.model, m.batch, ms(*ta), ms(*tb)),
                    tb / ta,
                )
            })
            .collect();
        let verdict = if slow.is_empty() { "met" } else { "missed" };
        let mut figure = format!(
            "{} of {} model × batch rows hold",
            got.len() - slow.len(),
            got.len()
        );
        if !slow.is_empty() {
            let _ = write!(figure, "; {a} against {b}: {}", misses(slow));
        }
        lines.push((what, verdict.to_string(), figure));
    }
    for (what, verdict, figure) in lines {
        line(md, what, &verdict, &figure);
    }
    md.push('\n');
}

/// The same architecture from the zoo and from its export within 10% of each other, on
/// weft CUDA f16 at batch 1: the zoo rows come from `--models` (`zoo:bert_base`, ...).
fn zoo_check(md: &mut String, gpu: &str, of: &[&Merged], zoo: &[ModelRow]) {
    let what = "zoo and export within 10% (weft CUDA f16, batch 1)";
    let mut got = Vec::new();
    let mut missing = Vec::new();
    let mut dates = Vec::new();
    for (name, res) in ZOO_PAIRS {
        let export = of
            .iter()
            .find(|m| m.model == name && m.batch == 1)
            .and_then(|m| m.ms(&Column::weft("cuda", "f16")));
        let z = zoo
            .iter()
            .find(|r| {
                r.model == format!("zoo:{name}")
                    && (r.batch, r.resolution) == (1, res)
                    && (r.engine.as_str(), r.target.as_str(), r.dtype.as_str())
                        == ("weft", "cuda", "f16")
                    && (super::gpu(&r.device) == gpu)
            })
            .map(|r| (r.ms, r.unix_time));
        match (z, export) {
            (Some((z, when)), Some(e)) => {
                got.push((name, z, e));
                // The zoo rows come from another command (`--models`), often another
                // call: their dates say so.
                let day = super::utc(when);
                if !dates.contains(&day) {
                    dates.push(day);
                }
            }
            _ => missing.push(name),
        }
    }
    if got.is_empty() {
        line(
            md,
            what,
            "not measured",
            "no architecture has both a zoo row (`--models`) and an export row",
        );
        return;
    }
    let apart: Vec<String> = got
        .iter()
        .filter(|(_, z, e)| z.max(*e) / z.min(*e) > 1.1)
        .map(|(n, z, e)| {
            format!(
                "{n} zoo {} vs export {} ({:+.0}%)",
                ms(*z),
                ms(*e),
                (e / z - 1.0) * 100.0
            )
        })
        .collect();
    let mut figure = format!(
        "{} of {} within 10% (zoo rows measured {})",
        got.len() - apart.len(),
        got.len(),
        dates.join(", ")
    );
    if !apart.is_empty() {
        let _ = write!(figure, "; apart: {}", apart.join(", "));
    }
    if !missing.is_empty() {
        let _ = write!(figure, "; not measured: {}", missing.join(", "));
    }
    let verdict = match (apart.is_empty(), missing.is_empty()) {
        (false, _) => "missed",
        (true, false) => "not measured in full",
        (true, true) => "met",
    };
    line(md, what, verdict, &figure);
}
