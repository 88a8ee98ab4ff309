//! `weft report`: one command from measurements to the results page. It runs the
//! benchmark here (or not, `--no-run`), reads earlier runs (`--from`: JSON written by
//! `weft bench --json` or a previous report's `report.json`), compiles every op × schedule
//! for the GPUs this machine lacks ([`offline`]), and rewrites `results.md`, the charts
//! (`crate::charts`) and `report.json` in the output folder ([`page`]).
//!
//! A run on the GPU machine that reads a run from a machine with other drivers (the CPU
//! Vulkan driver, hipcc) puts every target on one page; the page names where each figure
//! came from: date, device, driver and weft's commit per run.

pub mod offline;
pub mod page;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bench::BenchRun;
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

/// Adds a `--from` file: a report's data (its runs and offline rows) or one benchmark run.
pub(crate) fn include(data: &mut ReportData, path: &Path) -> Result<(), CliError> {
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
