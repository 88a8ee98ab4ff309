//! The results page (`results.md`) and its charts, written from a [`ReportData`].

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::offline::{OfflineRow, OfflineStatus};
use super::{CHART_DIR, ReportData, same_measurement};
use crate::bench::{Kind, Row, Status};
use crate::charts::{self, ChartError, Point, Roofs};
use crate::error::CliError;
use crate::format::{fmt_sig, fmt_time};

/// A row with the run it came from and its target's shape class.
#[derive(Clone, Copy)]
struct Entry<'a> {
    row: &'a Row,
    run: usize,
    /// `bench` (a GPU's benchmark shapes) or `small`.
    size: &'a str,
}

/// Writes `results.md` and the charts into `out`; returns the paths written.
pub fn write(data: &ReportData, out: &Path) -> Result<Vec<PathBuf>, CliError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CliError::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let entries = entries(data);
    let mut written = Vec::new();
    let chart_dir = out.join(CHART_DIR);
    let chart = |r: Result<Vec<PathBuf>, ChartError>| r.map_err(|e| CliError::Chart(Box::new(e)));

    let mut md = String::new();
    header(&mut md, data, out);
    runs(&mut md, data);
    timing(&mut md, out);
    written.extend(super::models::section(
        &mut md,
        &data.models,
        out,
        &chart_dir,
    )?);
    written.extend(super::corpus_page::section(
        &mut md,
        &data.corpus,
        &data.models,
        out,
        &chart_dir,
    )?);
    super::generation::section(&mut md, &data.generation);
    let shown: Vec<&Row> = entries.iter().map(|e| e.row).collect();
    super::beside::section(&mut md, &data.op_baselines, &shown);
    written.extend(super::sweeps::section(
        &mut md,
        &data.sweeps,
        out,
        &chart_dir,
    )?);
    super::vendors::section(&mut md, &data.sweeps, &data.models);

    // Cross-vendor summary and its chart.
    let summary = Summary::of(data, &entries);
    md.push_str("## Cross-vendor summary\n\n");
    md.push_str(
        "Every op × schedule at its first benchmark shape on each GPU target (at its first \
         small shape on CPU drivers), with the AMD and Apple columns compiled offline from \
         the same schedule: for AMD the worst kernel's VGPRs, spills and waves per SIMD as \
         hipcc reports them, for Apple whether the MSL passes the syntax check. Speed is \
         the reference's time ÷ weft's (1.00x = as fast as the vendor library; the \
         reference is named in the per-op tables).\n\n",
    );
    let points = summary.points();
    let files = chart(charts::op_chart(
        "cross-vendor",
        &points,
        " of every op × schedule",
        &chart_dir.join("cross-vendor"),
    ))?;
    super::image(
        &mut md,
        &files,
        out,
        "every op × schedule on every GPU target",
    );
    written.extend(files);
    md.push_str(&summary.table());

    // Roofline.
    let (roof_points, roofs, roof_text) = roofline_inputs(&entries);
    let files = chart(charts::roofline(
        &roof_points,
        &roofs,
        &chart_dir.join("roofline"),
    ))?;
    if !files.is_empty() {
        md.push_str("## Roofline\n\n");
        md.push_str(&roof_text);
        super::image(&mut md, &files, out, "roofline");
        written.extend(files);
    }

    // Per op.
    md.push_str("## Per op\n\n");
    let ops: Vec<&str> = ordered(entries.iter().map(|e| e.row.op.as_str()));
    for op in ops {
        let of_op: Vec<Entry> = entries.iter().copied().filter(|e| e.row.op == op).collect();
        let _ = writeln!(md, "### {op}\n");
        let points: Vec<Point> = of_op.iter().filter_map(|e| point(e.row)).collect();
        let files = chart(charts::op_chart(op, &points, "", &chart_dir.join(op)))?;
        super::image(&mut md, &files, out, op);
        written.extend(files);
        md.push_str(&op_table(&of_op, data));
    }

    offline_section(&mut md, &data.offline);

    let page = out.join("results.md");
    // Whole or not at all: a reader (or a killed run) never leaves half a page.
    weft_tune::write_whole(&page, md.as_bytes()).map_err(io(&page))?;
    written.insert(0, page);
    Ok(written)
}

/// Every row of every run; where two runs measured the same op, schedule, shape and
/// target on the same device, the later one.
fn entries(data: &ReportData) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry> = Vec::new();
    for (i, run) in data.runs.iter().enumerate() {
        for row in &run.rows {
            let size = run
                .targets
                .iter()
                .find(|t| t.target == row.target)
                .map_or("bench", |t| t.size.as_str());
            let same = |e: &Entry| same_measurement(e.row, row);
            match out.iter().position(same) {
                Some(j) => out[j] = Entry { row, run: i, size },
                None => out.push(Entry { row, run: i, size }),
            }
        }
    }
    out
}

/// Distinct values in first-seen order.
fn ordered<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = Vec::new();
    for i in items {
        if !seen.contains(&i) {
            seen.push(i);
        }
    }
    seen
}

/// A chart point for a row that ran right.
fn point(r: &Row) -> Option<Point> {
    let ms = r.median_ms.filter(|_| r.status == Status::Ok)?;
    Some(Point {
        op: r.op.clone(),
        schedule: r.schedule.clone(),
        shape: r.shape.clone(),
        target: r.target.clone(),
        reference: r.kind != Kind::Weft,
        seconds: ms / 1e3,
        flops: if r.kind == Kind::Copy { 0.0 } else { r.flops },
        bytes: r.bytes,
    })
}

fn header(md: &mut String, data: &ReportData, out: &Path) {
    md.push_str("# Results\n\n");
    let _ = writeln!(
        md,
        "Written by `weft report` on {}, weft {} at commit `{}`:\n\n```\n{}\n```\n",
        super::utc(data.unix_time),
        data.weft_version,
        data.commit,
        data.command
    );
    md.push_str(
        "Every figure on this page comes from the runs listed below, each op row checked \
         against the float64 reference before it was timed (whole models: see their \
         section); where a later run measured an op again on the same device, its rows \
         replace the earlier run's. Do not edit it by hand: `weft report` rewrites it.",
    );
    if out.join("results-history.md").exists() {
        md.push_str(
            " Figures measured by hand-run scripts before `weft report` existed (tensor-core \
             tuning, Winograd, bounds checks) are kept in [results-history.md](results-history.md).",
        );
    }
    md.push_str("\n\n");
}

fn runs(md: &mut String, data: &ReportData) {
    if data.runs.is_empty() {
        return;
    }
    md.push_str("## Runs\n\n");
    md.push_str(
        "| run | date (UTC) | target | device | driver | ops | shapes | WGSL runtime checks | weft commit |\n",
    );
    md.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for (i, run) in data.runs.iter().enumerate() {
        // A later run that measured some ops again replaces those rows only: say which.
        let ops = ordered(run.rows.iter().map(|r| r.op.as_str()));
        let ops = if weft_ops::OPS.iter().all(|o| ops.contains(&o.name)) {
            "all".to_string()
        } else {
            ops.join(", ")
        };
        for t in &run.targets {
            let checks = t
                .shader_checks
                .map_or("-".to_string(), |c| c.name().to_string());
            let _ = writeln!(
                md,
                "| {} | {} | `{}` | {} | {} | {ops} | {} | {checks} | `{}` |",
                i + 1,
                super::utc(run.unix_time),
                t.target,
                t.device,
                t.driver.as_deref().unwrap_or("-"),
                t.size,
                if run.commit.is_empty() {
                    "?"
                } else {
                    &run.commit
                }
            );
        }
    }
    md.push('\n');
}

fn timing(md: &mut String, out: &Path) {
    md.push_str("## How times are measured\n\n");
    md.push_str(
        "Times are **kernel** times, the median of the samples. On CUDA one event pair \
         brackets each group of back-to-back runs, replayed as a CUDA graph, so the host's \
         launch cost (a few µs per launch) stays out of short kernels; cuBLAS, cuDNN and the \
         copy are timed the same way in the same process. On wgpu, timestamp queries at the \
         start and end of each run's compute passes (the wall clock around many runs where \
         the adapter has none); a timing that follows an idle spell first runs back to \
         back until the GPU's clocks are back up (NVIDIA's Vulkan driver lowers them while \
         the host compiles): at least 200 ms since 2026-11-26, 500 ms since 2026-11-27, \
         when a timing whose first samples are slower than its last is also taken again \
         (earlier Vulkan rows may have been timed at lowered clocks: `docs/vulkan.md`). \
         The host's view — launch, then wait, per run — is measured \
         apart and shown as *host* in the per-op tables: the difference is launch \
         overhead. Back-to-back runs overlap each launch's setup with the previous run's \
         end, which a lone launch cannot: against Nsight Compute's duration of one launch \
         the kernel times here read about 1 µs lower, which is within a few percent above \
         ~50 µs and about a quarter of a 5 µs kernel (`docs/timing.md` has the \
         measurements, and the per-launch event pairs that read 35% higher instead).\n\n",
    );
    if let Ok(text) = std::fs::read_to_string(out.join("timing-check.md")) {
        md.push_str(text.trim());
        md.push_str("\n\n");
    }
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |ms| {
        fmt_time(Duration::from_secs_f64(ms / 1e3))
    })
}

/// `1.52x` speed of the reference (reference time ÷ weft time).
fn speed(r: &Row) -> String {
    match (r.vs_reference, &r.reference) {
        (Some(v), Some(name)) if v > 0.0 => format!("{:.2}x {name}", 1.0 / v),
        _ => "-".to_string(),
    }
}

fn status_cell(r: &Row) -> &'static str {
    match (r.status, r.kind) {
        (Status::Ok, Kind::Weft) => "ok",
        (Status::Ok, _) => "reference",
        (Status::Wrong, _) => "**WRONG**",
        (Status::Failed, _) => "**FAILED**",
        (Status::Refused, _) => "refused",
    }
}

fn op_table(entries: &[Entry], data: &ReportData) -> String {
    let mut md = String::from(
        "| schedule | shape | target | kernel time | host (launch + wait) | throughput | speed vs reference | max error | bounds | status |\n\
         |---|---|---|---:|---:|---:|---:|---:|---|---|\n",
    );
    let mut notes = Vec::new();
    for e in entries {
        let r = e.row;
        let throughput = match (r.gflops, r.gbps) {
            (Some(g), _) => format!("{} GFLOP/s", fmt_sig(g)),
            (None, Some(b)) => format!("{} GB/s", fmt_sig(b)),
            _ => "-".to_string(),
        };
        let mut status = status_cell(r).to_string();
        let config = r.config.as_ref().map(|c| {
            let source = r.config_source.as_deref().unwrap_or("");
            format!("config `{c}`: {source}")
        });
        if let Some(m) = r.message.as_ref().or(r.note.as_ref()).or(config.as_ref()) {
            notes.push(format!(
                "{}. `{}` {} {} (run {}): {}",
                notes.len() + 1,
                r.target,
                r.schedule,
                r.shape,
                e.run + 1,
                m.replace('\n', " ")
            ));
            let _ = write!(status, " [{}]", notes.len());
        }
        let schedule = match r.kind {
            Kind::Weft => r.schedule.clone(),
            _ => format!("*{}*", r.schedule),
        };
        let _ = writeln!(
            md,
            "| {schedule} | {} | `{}` | {} | {} | {throughput} | {} | {} | {} | {status} |",
            r.shape,
            r.target,
            ms(r.median_ms),
            ms(r.host_ms),
            if r.kind == Kind::Weft {
                speed(r)
            } else {
                "-".to_string()
            },
            r.error_text(),
            r.bounds.as_deref().unwrap_or("-"),
        );
    }
    md.push('\n');
    for n in notes {
        md.push_str(&n);
        md.push('\n');
    }
    if !data.runs.is_empty() {
        md.push('\n');
    }
    md
}

/// The cross-vendor summary: one row per op × schedule.
struct Summary<'a> {
    /// (op, schedule)
    keys: Vec<(&'a str, &'a str)>,
    /// Measured targets: (target, size) in first-seen order.
    targets: Vec<(&'a str, &'a str)>,
    entries: &'a [Entry<'a>],
    offline: &'a [OfflineRow],
    offline_targets: Vec<&'a str>,
}

impl<'a> Summary<'a> {
    fn of(data: &'a ReportData, entries: &'a [Entry<'a>]) -> Summary<'a> {
        let mut keys: Vec<(&str, &str)> = Vec::new();
        for e in entries.iter().filter(|e| e.row.kind == Kind::Weft) {
            let k = (e.row.op.as_str(), e.row.schedule.as_str());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for o in &data.offline {
            let k = (o.op.as_str(), o.schedule.as_str());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        // GPU targets (benchmark shapes) first, in run order, then CPU drivers.
        let targets: Vec<(&str, &str)> = {
            let mut t: Vec<(&str, &str)> = Vec::new();
            for e in entries {
                let k = (e.row.target.as_str(), e.size);
                if !t.contains(&k) {
                    t.push(k);
                }
            }
            t.sort_by_key(|(_, size)| *size != "bench");
            t
        };
        let offline_targets: BTreeSet<&str> =
            data.offline.iter().map(|o| o.target.as_str()).collect();
        let mut offline_targets: Vec<&str> = offline_targets.into_iter().collect();
        // AMD first, in `AMD_ARCHS` order, then the rest (metal).
        let rank = |t: &str| {
            super::offline::AMD_ARCHS
                .iter()
                .position(|a| t.ends_with(a))
                .unwrap_or(usize::MAX)
        };
        offline_targets.sort_by_key(|t| (rank(t), *t));
        Summary {
            keys,
            targets,
            entries,
            offline: &data.offline,
            offline_targets,
        }
    }

    /// The representative weft row of an op × schedule on a target: its first shape.
    fn row(&self, (op, schedule): (&str, &str), target: &str) -> Option<&'a Row> {
        self.entries.iter().map(|e| e.row).find(|r| {
            r.kind == Kind::Weft && r.op == op && r.schedule == schedule && r.target == target
        })
    }

    fn points(&self) -> Vec<Point> {
        let mut out = Vec::new();
        // GPU targets only, unless there are none (a machine with a CPU driver alone).
        let any_bench = self.targets.iter().any(|t| t.1 == "bench");
        for &key in &self.keys {
            for &(target, size) in &self.targets {
                if any_bench && size != "bench" {
                    continue;
                }
                if let Some(r) = self.row(key, target)
                    && let Some(mut p) = point(r)
                {
                    // One group per op × schedule, one series per target.
                    p.op = "cross-vendor".into();
                    p.shape = format!("{}/{} {}", key.0, key.1, r.shape);
                    p.schedule = target.to_string();
                    p.reference = true;
                    out.push(p);
                }
            }
        }
        out
    }

    fn table(&self) -> String {
        let mut head = vec!["op".to_string(), "schedule".to_string()];
        let mut align = vec!["---", "---"];
        // Ratios are to the first GPU target, and only between GPU targets (CPU drivers
        // run other shapes).
        let first = self.targets.first().filter(|t| t.1 == "bench").map(|t| t.0);
        let ratio_col = |t: &str, size: &str| size == "bench" && Some(t) != first;
        for &(t, size) in &self.targets {
            // `cuda` NVIDIA H100 80GB HBM3 (bench shape): the device without its details.
            let device = self
                .entries
                .iter()
                .find(|e| e.row.target == t)
                .map_or("", |e| e.row.device.split(" (").next().unwrap_or(""));
            head.push(format!("`{t}` {device} ({size} shape)"));
            align.push("---:");
            if ratio_col(t, size) {
                head.push(format!("`{t}` ÷ `{}` time", first.unwrap_or("")));
                align.push("---:");
            }
        }
        for t in &self.offline_targets {
            head.push(match *t {
                "metal" => "Apple (MSL check)".to_string(),
                amd => format!("`{amd}` VGPR / spills / waves"),
            });
            align.push("---");
        }
        let mut md = format!("| {} |\n|{}|\n", head.join(" | "), align.join("|"));
        for &key in &self.keys {
            let mut cells = vec![key.0.to_string(), key.1.to_string()];
            let first_row = first.and_then(|f| self.row(key, f));
            for &(t, size) in &self.targets {
                let r = self.row(key, t);
                cells.push(match r {
                    Some(r) if r.status == Status::Ok => {
                        let mut c = format!("{} at {}", ms(r.median_ms), r.shape);
                        if r.vs_reference.is_some() {
                            let _ = write!(c, ", {}", speed(r).split(' ').next().unwrap_or(""));
                        }
                        c
                    }
                    Some(r) => status_cell(r).to_string(),
                    None => "-".to_string(),
                });
                if ratio_col(t, size) {
                    let ratio = match (r, first_row) {
                        (Some(a), Some(b))
                            if a.shape == b.shape
                                && a.status == Status::Ok
                                && b.status == Status::Ok =>
                        {
                            match (a.median_ms, b.median_ms) {
                                (Some(x), Some(y)) if y > 0.0 => format!("{:.2}x", x / y),
                                _ => "-".to_string(),
                            }
                        }
                        _ => "-".to_string(),
                    };
                    cells.push(ratio);
                }
            }
            for t in &self.offline_targets {
                let o = self
                    .offline
                    .iter()
                    .find(|o| o.op == key.0 && o.schedule == key.1 && o.target == *t);
                cells.push(match o {
                    None => "-".to_string(),
                    Some(o) => offline_cell(o),
                });
            }
            let _ = writeln!(md, "| {} |", cells.join(" | "));
        }
        md.push('\n');
        md
    }
}

fn offline_cell(o: &OfflineRow) -> String {
    match o.status {
        OfflineStatus::Ok if o.target == "metal" => "passes".to_string(),
        OfflineStatus::Ok => format!(
            "{} / {} / {}",
            o.vgprs.map_or("-".into(), |v| v.to_string()),
            o.spills.map_or("-".into(), |v| v.to_string()),
            o.occupancy.map_or("-".into(), |v| v.to_string()),
        ),
        OfflineStatus::Failed => "**FAILED**".to_string(),
        OfflineStatus::Refused => "refused".to_string(),
        OfflineStatus::Skipped => "not compiled (no compiler)".to_string(),
    }
}

/// The roofline's points (GPU rows that ran right) and roofs: the fastest copy's
/// bandwidth and the fastest reference's FLOP/s, both measured in the runs.
fn roofline_inputs(entries: &[Entry]) -> (Vec<Point>, Roofs, String) {
    let gpu: Vec<&Row> = {
        let any_bench = entries.iter().any(|e| e.size == "bench");
        entries
            .iter()
            .filter(|e| !any_bench || e.size == "bench")
            .map(|e| e.row)
            .filter(|r| r.status == Status::Ok)
            .collect()
    };
    let points: Vec<Point> = gpu.iter().filter_map(|r| point(r)).collect();
    let best = |kind: Kind, f: fn(&Row) -> Option<f64>| {
        gpu.iter()
            .filter(|r| r.kind == kind)
            .filter_map(|r| f(r).map(|v| (v, *r)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let copy = best(Kind::Copy, |r| r.gbps);
    let peak = best(Kind::Vendor, |r| r.gflops);
    let label = gpu.first().map(|r| r.device.clone()).unwrap_or_default();
    let mut text = String::from(
        "Achieved FLOP/s of every row that ran right against its arithmetic intensity \
         (FLOP per byte of minimum traffic: inputs read once, output written once). ",
    );
    match (copy, peak) {
        (Some((bw, c)), Some((fl, p))) => {
            let _ = write!(
                text,
                "Roofs measured in the same runs: bandwidth {} GB/s ({} at {}), peak {} \
                 GFLOP/s ({} at {}).",
                fmt_sig(bw),
                c.schedule,
                c.shape,
                fmt_sig(fl),
                p.schedule,
                p.shape
            );
        }
        _ => text.push_str("No copy or vendor-library row ran here, so no roof is drawn."),
    }
    text.push_str("\n\n");
    let roofs = Roofs {
        peak_flops: peak.map(|(g, _)| g * 1e9),
        bandwidth: copy.map(|(b, _)| b * 1e9),
        label,
    };
    (points, roofs, text)
}

fn offline_section(md: &mut String, rows: &[OfflineRow]) {
    if rows.is_empty() {
        return;
    }
    md.push_str("## Offline compiles\n\n");
    md.push_str(
        "Every op × schedule at its first benchmark shape, compiled for GPUs this machine \
         does not have. AMD: the HIP source, `hipcc --genco` with the resource remarks; \
         per function the worst kernel (most registers and LDS, spills summed, fewest \
         waves). Apple: the MSL against weft's `metal_stdlib` shim with the host C++ \
         compiler's syntax check (no Metal compiler runs on Linux).\n\n",
    );
    md.push_str(
        "| op | schedule | shape | target | kernels | VGPRs | AGPRs | SGPRs | spills | LDS bytes | waves/SIMD | status |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let mut notes = Vec::new();
    let n = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
    for o in rows {
        let mut status = match o.status {
            OfflineStatus::Ok => "ok",
            OfflineStatus::Failed => "**FAILED**",
            OfflineStatus::Refused => "refused",
            OfflineStatus::Skipped => "skipped",
        }
        .to_string();
        if let Some(m) = &o.message {
            notes.push(format!(
                "{}. {}/{} on `{}`: {}",
                notes.len() + 1,
                o.op,
                o.schedule,
                o.target,
                m.replace('\n', " ")
            ));
            let _ = write!(status, " [{}]", notes.len());
        }
        let _ = writeln!(
            md,
            "| {} | {} | {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {status} |",
            o.op,
            o.schedule,
            o.shape,
            o.target,
            o.kernels,
            n(o.vgprs),
            n(o.agprs),
            n(o.sgprs),
            n(o.spills),
            n(o.lds_bytes),
            n(o.occupancy),
        );
    }
    md.push('\n');
    let compilers: BTreeSet<&str> = rows.iter().filter_map(|o| o.compiler.as_deref()).collect();
    for c in compilers {
        let _ = writeln!(md, "- compiler: {c}");
    }
    md.push('\n');
    for n in notes {
        md.push_str(&n);
        md.push('\n');
    }
}
