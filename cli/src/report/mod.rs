//! `weft report`: one command from measurements to the results page. It runs the
//! benchmark here (or not, `--no-run`), reads earlier runs (`--from`: JSON written by
//! `weft bench --json` or a previous report's `report.json`), compiles every op × schedule
//! for the GPUs this machine lacks ([`offline`]), and rewrites `results.md`, the charts
//! (`crate::charts`) and `report.json` in the output folder ([`page`]).
//!
//! It adds to what the output folder holds rather than replacing it: the `report.json`
//! already there is read first ([`include_existing`]), every kind of row it stores
//! (runs, offline compiles, models, sweeps, op baselines, corpus and generation runs), so
//! a report given only some inputs (`--corpus` alone, say) still writes every section
//! and chart the earlier reports wrote, redrawn from those rows. On the page a later
//! run's rows replace those an earlier run measured on the same device, and a run
//! replaced in every row is dropped ([`supersede`]); sweeps, the corpus and generation
//! files (`--sweeps`, `--corpus`, `--generation`) are kept whole and merged the same way
//! ([`sweeps`], [`corpus`], [`generation`]). Charts the page no longer draws (no row is
//! left to draw them from) are removed ([`stale`]); the page and `report.json` are
//! written whole. `report.json` carries its [`FORMAT`]: an older file loads, one a newer
//! weft wrote is refused rather than read in part.
//!
//! A run on the GPU machine that reads a run from a machine with other drivers (the CPU
//! Vulkan driver, hipcc) puts every target on one page; the page names where each figure
//! came from: date, device, driver and weft's commit per run.

pub mod beside;
pub mod corpus;
pub mod corpus_page;
pub mod generation;
pub mod models;
pub mod offline;
pub mod page;
pub mod stale;
pub mod sweeps;
pub mod vendors;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bench::{BenchRun, Row};
use crate::error::CliError;
use offline::{OfflineRow, OfflineStatus};

/// The GPU of a device string: `NVIDIA H100 80GB HBM3` of `NVIDIA H100 80GB HBM3
/// (sm_90)` and of `NVIDIA H100 80GB HBM3 (Vulkan, DiscreteGpu)` (the model tables and
/// the vendors' pairs group rows by it).
pub(crate) fn gpu(device: &str) -> &str {
    device.split(" (").next().unwrap_or(device).trim()
}

/// `![alt](charts/x.svg)`: the SVG of `files`, relative to `out`.
pub(crate) fn image(md: &mut String, files: &[PathBuf], out: &Path, alt: &str) {
    let svg = files
        .iter()
        .find(|f| f.extension().is_some_and(|e| e == "svg"))
        .and_then(|f| f.strip_prefix(out).ok())
        .map(|f| f.to_string_lossy().replace('\\', "/"));
    if let Some(svg) = svg {
        let _ = writeln!(md, "![{alt}]({svg})\n");
    }
}

/// `2026-11-23 14:02 UTC` from seconds since the Unix epoch.
pub fn utc(secs: u64) -> String {
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    format!("{} {h:02}:{m:02} UTC", weft_tune::date(secs))
}

/// A "Done when" check's line on a page: `- what: **verdict** — figure`.
pub(crate) fn verdict_line(md: &mut String, what: &str, verdict: &str, figure: &str) {
    let _ = writeln!(md, "- {what}: **{verdict}** — {figure}");
}

/// The folder of the charts inside the output folder.
pub(crate) const CHART_DIR: &str = "charts";

/// The version of `report.json` this weft writes. 1: every file written before the field
/// existed (2026-11-29; they hold no `format`, and the kinds of rows added since are
/// empty when absent); 2: the same fields with `format` written. A field added later
/// takes `#[serde(default)]` so older files still load; a change that an older weft
/// would misread raises this number, and an older weft then refuses the file
/// ([`include`]).
pub const FORMAT: u32 = 2;

/// The format of a `report.json` that names none.
fn format_before_versions() -> u32 {
    1
}

/// Everything a results page is written from (saved beside it as `report.json`, so a later
/// report can include it with `--from`). Every section of the page is written from
/// these rows alone, so a report keeps every section whose inputs it was not given.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReportData {
    /// The version of this file's layout ([`FORMAT`]).
    #[serde(default = "format_before_versions")]
    pub format: u32,
    pub weft_version: String,
    /// The commit of the `weft` that wrote the page.
    pub commit: String,
    /// Seconds since the Unix epoch when the page was written.
    pub unix_time: u64,
    /// The command line that wrote it.
    pub command: String,
    /// Benchmark runs, oldest first.
    pub runs: Vec<BenchRun>,
    /// Offline compiles: AMD through hipcc, Apple's MSL check.
    pub offline: Vec<OfflineRow>,
    /// Whole models end to end, weft's and the baselines'.
    #[serde(default)]
    pub models: Vec<models::ModelRow>,
    /// Shape sweeps (`weft sweep`): the rule's configs against tuning across shapes.
    #[serde(default)]
    pub sweeps: Vec<crate::sweep::Sweep>,
    /// Single kernels of another engine at weft's op shapes (`--baselines` op lines).
    #[serde(default)]
    pub op_baselines: Vec<beside::OpBaseline>,
    /// The corpus against PyTorch (`--corpus`: `scripts/speed.py --json` files), one run a
    /// file, merged on the page.
    #[serde(default)]
    pub corpus: Vec<corpus::CorpusRun>,
    /// Generation against PyTorch (`--generation`: `scripts/generate_check.py --speed`
    /// files).
    #[serde(default)]
    pub generation: Vec<generation::GenRun>,
}

/// Adds a `--from` file: a report's data (its runs and offline rows) or one benchmark run.
pub(crate) fn include(data: &mut ReportData, path: &Path) -> Result<(), CliError> {
    let bad = |reason: String| CliError::ReportInput {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if value.get("runs").is_some() {
        // Checked before the rows are read: a newer layout could read as garbage.
        let format = value
            .get("format")
            .map_or(Some(1), serde_json::Value::as_u64);
        match format {
            Some(f) if f <= u64::from(FORMAT) => {}
            _ => {
                let named = value.get("format").map_or("?".into(), |f| f.to_string());
                return Err(bad(format!(
                    "a weft report of format {named}, which this weft (format {FORMAT} and \
                     older) cannot read: written by a newer weft"
                )));
            }
        }
        let other: ReportData =
            serde_json::from_value(value).map_err(|e| bad(format!("not a weft report: {e}")))?;
        // Every kind of row the report holds: a section whose rows were left out here
        // would vanish from the page the next report writes.
        let ReportData {
            format: _,
            weft_version: _,
            commit: _,
            unix_time: _,
            command: _,
            runs,
            offline,
            models: model_rows,
            sweeps: sweep_rows,
            op_baselines,
            corpus: corpus_runs,
            generation: generation_runs,
        } = other;
        data.runs.extend(runs);
        merge_offline(&mut data.offline, offline);
        models::merge(&mut data.models, model_rows);
        for s in sweep_rows {
            sweeps::merge(&mut data.sweeps, s);
        }
        beside::merge(&mut data.op_baselines, op_baselines);
        corpus::merge(&mut data.corpus, corpus_runs);
        generation::merge(&mut data.generation, generation_runs);
    } else if value.get("rows").is_some() {
        let run: BenchRun = serde_json::from_value(value)
            .map_err(|e| bad(format!("not a `weft bench --json` file: {e}")))?;
        data.runs.push(run);
    } else {
        return Err(bad(
            "neither a `weft bench --json` file (no `rows`) nor a report (no `runs`)".into(),
        ));
    }
    Ok(())
}

/// Adds `new` offline rows; a row replaces an earlier one of the same op, schedule and
/// target unless it was skipped (a machine without hipcc keeps another machine's
/// figures).
pub(crate) fn merge_offline(rows: &mut Vec<OfflineRow>, new: Vec<OfflineRow>) {
    for row in new {
        let same =
            |o: &OfflineRow| o.op == row.op && o.schedule == row.schedule && o.target == row.target;
        match rows.iter().position(same) {
            Some(i) if row.status != OfflineStatus::Skipped => rows[i] = row,
            Some(_) => {}
            None => rows.push(row),
        }
    }
}

/// Adds the report already in the output folder (`json`, its `report.json`), if there is
/// one: `weft report` adds to it, never replaces it. One it cannot read is an error
/// before anything runs, and the file is left as it is. Returns how many runs it held.
pub(crate) fn include_existing(data: &mut ReportData, json: &Path) -> Result<usize, CliError> {
    if !json.exists() {
        return Ok(0);
    }
    let before = data.runs.len();
    include(data, json).map_err(|e| match e {
        CliError::ReportInput { path, reason } => CliError::ReportInput {
            path,
            reason: format!(
                "{reason}; `weft report` adds to the report.json in --out and does not replace \
                 one it cannot read: move it away, or pass another --out"
            ),
        },
        e => e,
    })?;
    Ok(data.runs.len() - before)
}

/// True when `b` measures what `a` measured: the same op, schedule, shape, target, device
/// and kind of row. A later run's row replaces an earlier one of the same measurement.
pub(crate) fn same_measurement(a: &Row, b: &Row) -> bool {
    (&a.op, &a.schedule, &a.shape, &a.target, &a.device, a.kind)
        == (&b.op, &b.schedule, &b.shape, &b.target, &b.device, b.kind)
}

/// Puts `runs` in the order they were measured (oldest first; runs of one time keep
/// their order) and drops a run whose every row a later run measured again
/// ([`same_measurement`]): it shows nothing on the page, so a report run again and again
/// does not pile up runs, and a run read twice (from the output folder and from `--from`)
/// appears once. A run that keeps one row of its own is kept whole: the page shows the
/// later run's rows where both measured the same, and `report.json` keeps both.
pub(crate) fn supersede(runs: &mut Vec<BenchRun>) {
    runs.sort_by_key(|r| r.unix_time);
    let replaced: Vec<bool> = (0..runs.len())
        .map(|i| {
            let later = runs[i + 1..].iter().flat_map(|r| &r.rows);
            let rows = &runs[i].rows;
            !rows.is_empty()
                && rows
                    .iter()
                    .all(|row| later.clone().any(|l| same_measurement(l, row)))
        })
        .collect();
    // `retain` visits the runs in order, once each.
    let mut i = 0;
    runs.retain(|_| {
        i += 1;
        !replaced[i - 1]
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(unix_time: u64, device: &str, rows: &[(&str, &str)]) -> BenchRun {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|(op, shape)| {
                serde_json::json!({
                    "op": op, "schedule": "s", "shape": shape, "target": "cuda",
                    "device": device, "kind": "weft", "status": "ok", "bound": "memory",
                    "median_ms": unix_time as f64, "min_ms": null, "host_ms": null,
                    "iters": 2, "flops": 1.0, "bytes": 1.0, "gflops": null, "gbps": null,
                    "vs_first": null, "vs_reference": null, "reference": null,
                    "max_rel_error": null, "message": null, "note": null, "bounds": null,
                    "config": null, "config_source": null
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "weft_version": "0.1.0", "commit": "c", "unix_time": unix_time,
            "tolerance": 1e-4, "shader_checks": "proven",
            "targets": [{"target": "cuda", "device": device, "size": "bench",
                         "shader_checks": null}],
            "rows": rows
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn shape(runs: &[BenchRun]) -> Vec<(u64, Vec<String>)> {
        runs.iter()
            .map(|r| {
                let rows = r.rows.iter().map(|x| format!("{} {}", x.op, x.shape));
                (r.unix_time, rows.collect())
            })
            .collect()
    }

    #[test]
    fn runs_replaced_in_every_row_on_the_same_device_are_dropped() {
        let h100 = "H100";
        let all = run(
            10,
            h100,
            &[("matmul", "n=1"), ("matmul", "n=2"), ("vecadd", "n=1")],
        );
        let other_gpu = run(20, "L4", &[("vecadd", "n=1")]);
        let again = run(30, h100, &[("vecadd", "n=1")]);
        // Given out of order, and the first run twice (from --out and from --from).
        let mut runs = vec![again.clone(), all.clone(), other_gpu, all.clone()];
        supersede(&mut runs);
        let all_rows: Vec<String> = vec![
            "matmul n=1".into(),
            "matmul n=2".into(),
            "vecadd n=1".into(),
        ];
        // The first run stays whole (its vecadd row is hidden on the page, not dropped).
        assert_eq!(
            shape(&runs),
            [
                (10, all_rows.clone()),
                (20, vec!["vecadd n=1".into()]),
                (30, vec!["vecadd n=1".into()]),
            ]
        );
        // A run whose every row was measured again is gone.
        let mut runs = vec![again.clone(), run(5, h100, &[("vecadd", "n=1")]), all];
        supersede(&mut runs);
        assert_eq!(
            shape(&runs),
            [(10, all_rows), (30, vec!["vecadd n=1".into()])]
        );
    }
}
