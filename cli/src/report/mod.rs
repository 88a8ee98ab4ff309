//! `weft report`: one command from measurements to the results page. It runs the
//! benchmark here (or not, `--no-run`), reads earlier runs (`--from`: JSON written by
//! `weft bench --json` or a previous report's `report.json`), compiles every op × schedule
//! for the GPUs this machine lacks ([`offline`]), and rewrites `results.md`, the charts
//! ([`charts`]) and `report.json` in the output folder ([`page`]).
//!
//! A run on the GPU machine that reads a run from a machine with other drivers (the CPU
//! Vulkan driver, hipcc) puts every target on one page; the page names where each figure
//! came from: date, device, driver and weft's commit per run.

pub mod charts;
pub mod offline;
pub mod page;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::args::ReportArgs;
use crate::bench::BenchRun;
use crate::commands::bench::{collect, write_json};
use crate::error::CliError;
use offline::{OfflineRow, OfflineStatus};

/// Everything a results page is written from (saved beside it as `report.json`, so a later
/// report can include it with `--from`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReportData {
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
}

/// Runs what `a` asks for and writes the page, the charts and `report.json`. Fails
/// (exit 1) when a row of this run is wrong or failed, after writing everything.
pub fn report(a: &ReportArgs) -> Result<(), CliError> {
    let mut data = ReportData {
        weft_version: env!("CARGO_PKG_VERSION").to_string(),
        commit: crate::COMMIT.to_string(),
        unix_time: weft_tune::unix_now(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        runs: Vec::new(),
        offline: Vec::new(),
    };
    for path in &a.from {
        include(&mut data, path)?;
    }
    let mut verdict = Ok(());
    if !a.no_run {
        let run = collect(&a.bench)?;
        if let Some(path) = &a.bench.json {
            write_json(&run, path)?;
        }
        verdict = run.verdict();
        data.runs.push(run);
    }
    if !a.no_compile {
        let ops = crate::select::ops(&a.bench.ops)?;
        eprintln!("weft: compiling every op x schedule offline (AMD through hipcc, MSL check)");
        merge_offline(&mut data.offline, offline::compile_all(&ops)?);
    }
    if data.runs.is_empty() && data.offline.is_empty() {
        return Err(CliError::EmptyReport);
    }
    let written = page::write(&data, &a.out)?;
    let json = a.out.join("report.json");
    let text = serde_json::to_string_pretty(&data)?;
    std::fs::write(&json, text + "\n").map_err(|source| CliError::Io {
        path: json.clone(),
        source,
    })?;
    println!("wrote {}", json.display());
    for path in written {
        println!("wrote {}", path.display());
    }
    verdict
}

/// Adds a `--from` file: a report's data (its runs and offline rows) or one benchmark run.
fn include(data: &mut ReportData, path: &Path) -> Result<(), CliError> {
    let bad = |reason: String| CliError::ReportInput {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if value.get("runs").is_some() {
        let other: ReportData =
            serde_json::from_value(value).map_err(|e| bad(format!("not a weft report: {e}")))?;
        data.runs.extend(other.runs);
        merge_offline(&mut data.offline, other.offline);
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
fn merge_offline(rows: &mut Vec<OfflineRow>, new: Vec<OfflineRow>) {
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
