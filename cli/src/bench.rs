//! Benchmark rows: what each measurement becomes, the ratios between rows, and the table
//! and JSON they print as. The CUDA reference rows (cuBLAS, cuDNN, a device-to-device
//! copy) are made in [`crate::references`].

use std::time::Duration;

use serde::{Deserialize, Serialize};
use weft_ops::{OpSpec, Shape, Workload};
use weft_runtime::{ShaderChecks, Timing};

use crate::error::CliError;
use crate::format::{Table, fmt_error, fmt_ratio, fmt_sig, fmt_time};
use weft_tune::measure::Measured;

/// Ops with fewer flops per byte than this (at their seed size) are memory-bound: their
/// throughput is GB/s and their reference is a copy; the others report GFLOP/s against
/// cuBLAS. A GPU's fp32 ridge point is 10–20 flop/byte, so vector add, window sum and a
/// 7x7 depthwise convolution are memory-bound and a 1024³ matmul (170) is not.
const COMPUTE_BOUND_INTENSITY: f64 = 16.0;

/// How a row ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran and matched the reference.
    Ok,
    /// Ran, but the output is wrong.
    Wrong,
    /// The target or device failed while running it.
    Failed,
    /// The target declines it (over a limit, a construct it lacks, a missing library).
    Refused,
}

/// What a row measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A weft schedule.
    Weft,
    /// The vendor library computing the same op (cuBLAS, cuDNN).
    Vendor,
    /// A device-to-device copy moving as many bytes as the op: the bandwidth roof.
    Copy,
}

/// Which throughput a row reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Compute,
    Memory,
}

/// One line of the benchmark table (and one JSON record).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub op: String,
    /// The schedule, or the reference's name (`cublas-sgemm`, `cudnn-fp16-nhwc`,
    /// `d2d-copy`, ...).
    pub schedule: String,
    pub shape: String,
    pub target: String,
    pub device: String,
    pub kind: Kind,
    pub status: Status,
    pub bound: Bound,
    pub median_ms: Option<f64>,
    pub min_ms: Option<f64>,
    /// The host's round trip per run (launch, then wait): kernel time plus launch
    /// overhead.
    pub host_ms: Option<f64>,
    pub iters: usize,
    /// Floating-point operations and bytes moved by one run.
    pub flops: f64,
    pub bytes: f64,
    pub gflops: Option<f64>,
    /// (Bytes read + bytes written) / median time, in 1e9 bytes per second.
    pub gbps: Option<f64>,
    /// Median time / the first target's median for the same op, schedule and shape.
    pub vs_first: Option<f64>,
    /// Median time / the reference row's for the same op and shape: the vendor library's
    /// where there is one, else the copy's.
    pub vs_reference: Option<f64>,
    /// The reference [`Row::vs_reference`] is to (its `schedule`).
    pub reference: Option<String>,
    /// The output's error against the float64 reference as a fraction of the tolerance
    /// (`weft_ops::check`: at most 1 is right; null: not measured, or infinite because an
    /// element was NaN).
    #[serde(default)]
    pub error: Option<f64>,
    /// Runs before weft 0.1's scale-aware check recorded the largest relative error
    /// (floored at 1e-6) instead; kept to read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rel_error: Option<f64>,
    /// Why a row is refused or failed, or what was wrong.
    pub message: Option<String>,
    /// What a reference row ran (cuDNN's fastest algorithm, ...).
    pub note: Option<String>,
    /// The bounds prover's verdict: on wgpu whether runtime checks were `off (proven)`,
    /// `kept (unproven)`, `on (forced)` or `off (forced)`; elsewhere `proven` or
    /// `unproven`.
    pub bounds: Option<String>,
    /// A template's config (`name=value,...`) and where it came from.
    pub config: Option<String>,
    pub config_source: Option<String>,
    /// Sort key: op, shape, kind, schedule, target.
    #[serde(skip)]
    pub(crate) order: (usize, usize, usize, usize, usize),
}

/// Where a row sits: indices of its op, shape, schedule and target.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    pub op: usize,
    pub shape: usize,
    pub schedule: usize,
    pub target: usize,
}

/// Whether an op is compute- or memory-bound (see [`COMPUTE_BOUND_INTENSITY`]).
pub fn bound(op: &OpSpec) -> Bound {
    match Workload::default_for(op.name) {
        Ok(w) if w.flops / w.bytes.max(1.0) >= COMPUTE_BOUND_INTENSITY => Bound::Compute,
        _ => Bound::Memory,
    }
}

impl Row {
    pub(crate) fn new(w: &Workload, schedule: &str, target: &str, device: &str, kind: Kind) -> Row {
        let mut row = Row::bare(w.op, &w.shape, schedule, target, device, kind);
        row.flops = w.flops;
        row.bytes = w.bytes;
        row
    }

    fn bare(
        op: &OpSpec,
        shape: &Shape,
        schedule: &str,
        target: &str,
        device: &str,
        kind: Kind,
    ) -> Row {
        Row {
            op: op.name.to_string(),
            schedule: schedule.to_string(),
            shape: shape.to_string(),
            target: target.to_string(),
            device: device.to_string(),
            kind,
            status: Status::Ok,
            bound: bound(op),
            median_ms: None,
            min_ms: None,
            host_ms: None,
            iters: 0,
            flops: 0.0,
            bytes: 0.0,
            gflops: None,
            gbps: None,
            vs_first: None,
            vs_reference: None,
            reference: None,
            error: None,
            max_rel_error: None,
            message: None,
            note: None,
            bounds: None,
            config: None,
            config_source: None,
            order: (0, 0, 0, 0, 0),
        }
    }

    pub(crate) fn placed(mut self, p: Place) -> Row {
        let kind = match self.kind {
            Kind::Weft => 0,
            Kind::Vendor => 1,
            Kind::Copy => 2,
        };
        self.order = (p.op, p.shape, kind, p.schedule, p.target);
        self
    }

    pub(crate) fn timed(mut self, t: &Timing) -> Row {
        let secs = t.median.as_secs_f64();
        self.median_ms = Some(secs * 1e3);
        self.min_ms = Some(t.min.as_secs_f64() * 1e3);
        self.host_ms = t.host.map(|h| h.as_secs_f64() * 1e3);
        self.iters = t.all.len();
        if secs > 0.0 {
            match self.bound {
                Bound::Compute => self.gflops = Some(self.flops / secs / 1e9),
                Bound::Memory => self.gbps = Some(self.bytes / secs / 1e9),
            }
        }
        self
    }

    /// The row with its output's `error`, wrong above `allowed` times the tolerance (1
    /// for weft's kernels; more for a vendor reference, which may sum in another order).
    pub(crate) fn checked(
        mut self,
        error: &weft_ops::check::Error,
        allowed: f64,
        what: &str,
    ) -> Row {
        self.error = error.ratio.is_finite().then_some(error.ratio);
        if error.ratio > allowed || !error.ratio.is_finite() {
            self.status = Status::Wrong;
            self.message = Some(CliError::wrong(what, error).to_string());
        }
        self
    }

    /// The error column's text: the error as a fraction of the tolerance, or an older
    /// run's relative error (`rel 2.5e-7`).
    pub(crate) fn error_text(&self) -> String {
        match (self.kind, self.error, self.max_rel_error, self.status) {
            (Kind::Copy, ..) => "-".to_string(),
            (_, Some(e), _, _) => crate::format::fmt_ratio_of_tolerance(e),
            (_, None, Some(rel), _) => format!("rel {}", fmt_error(rel)),
            (_, None, None, Status::Wrong) => fmt_error(f64::INFINITY),
            _ => "-".to_string(),
        }
    }

    pub(crate) fn failed(mut self, e: &CliError) -> Row {
        self.status = if e.is_refusal() {
            Status::Refused
        } else {
            Status::Failed
        };
        self.message = Some(e.to_string());
        self
    }

    /// A schedule of an op whose workload could not even be defined at `shape`.
    pub fn undefined(
        op: &OpSpec,
        shape: &Shape,
        schedule: &str,
        target: &str,
        device: &str,
        place: Place,
        error: &CliError,
    ) -> Row {
        Row::bare(op, shape, schedule, target, device, Kind::Weft)
            .placed(place)
            .failed(error)
    }

    /// A measurement of a weft schedule (a template with `choice`), or why there is none.
    pub fn weft(
        w: &Workload,
        schedule: &str,
        target: &str,
        device: &str,
        place: Place,
        choice: Option<&weft_tune::Choice>,
        result: Result<Measured, CliError>,
    ) -> Row {
        let mut row = Row::new(w, schedule, target, device, Kind::Weft).placed(place);
        row.config = choice.map(|c| c.config.to_string());
        row.config_source = choice.map(|c| c.source.to_string());
        let what = format!("{}/{schedule} at {} on {target}", w.op.name, w.shape);
        match result {
            Ok(m) => {
                row.bounds = Some(match m.checks_short() {
                    Some(c) => c.to_string(),
                    None if m.is_proven() => "proven".to_string(),
                    None => "unproven".to_string(),
                });
                // A record timed far from this run: said beside the config, where
                // the page and the table show where the config came from.
                let ratio = choice.and_then(|c| c.source.disagreement(m.timing.median));
                if let (Some(x), Some(src)) = (ratio, row.config_source.as_mut()) {
                    src.push_str(&format!(
                        "; {}",
                        weft_tune::ChoiceSource::disagreement_note(x)
                    ));
                }
                row.timed(&m.timing).checked(&m.error, 1.0, &what)
            }
            Err(e) => row.failed(&e),
        }
    }
}

/// Sorts rows (op, shape, weft before reference, schedule, target) and fills in the
/// ratio columns: to `first` (a target string) and to the reference of the same shape.
pub fn finish(rows: &mut [Row], first: &str) {
    rows.sort_by_key(|r| r.order);
    let snapshot: Vec<Row> = rows.to_vec();
    for row in rows.iter_mut() {
        let Some(t) = row.median_ms.filter(|_| row.status == Status::Ok) else {
            continue;
        };
        let same = |o: &&Row| o.op == row.op && o.shape == row.shape && o.status == Status::Ok;
        if row.kind == Kind::Weft {
            row.vs_first = snapshot
                .iter()
                .filter(same)
                .find(|o| o.kind == Kind::Weft && o.schedule == row.schedule && o.target == first)
                .and_then(|o| o.median_ms)
                .filter(|f| *f > 0.0)
                .map(|f| t / f);
            let reference = |kind: Kind| {
                snapshot
                    .iter()
                    .filter(same)
                    .find(|o| o.kind == kind && o.median_ms.is_some_and(|f| f > 0.0))
            };
            if let Some(r) = reference(Kind::Vendor).or_else(|| reference(Kind::Copy)) {
                row.vs_reference = r.median_ms.map(|f| t / f);
                row.reference = Some(r.schedule.clone());
            }
        }
    }
}

/// The rows as a table, then one note per row that was not right.
pub fn render(rows: &[Row], first: &str) -> String {
    let first_col = format!("vs {first}");
    let mut table = Table::new(&[
        "op",
        "schedule",
        "shape",
        "target",
        "median",
        "throughput",
        &first_col,
        "vs ref",
        "max err",
        "bounds",
        "status",
    ])
    .align_right(&[4, 5, 6, 7, 8]);
    let mut notes = Vec::new();
    for r in rows {
        let throughput = match (r.gflops, r.gbps) {
            (Some(g), _) => format!("{} GFLOP/s", fmt_sig(g)),
            (None, Some(b)) => format!("{} GB/s", fmt_sig(b)),
            _ => "-".to_string(),
        };
        let status = match (r.status, &r.message) {
            (Status::Ok, _) if r.kind != Kind::Weft => "reference".to_string(),
            (Status::Ok, _) => "ok".to_string(),
            (s, Some(m)) => {
                notes.push(format!(
                    "[{}] {} {}/{} {}: {m}",
                    notes.len() + 1,
                    r.target,
                    r.op,
                    r.schedule,
                    r.shape
                ));
                format!("{} [{}]", status_word(s), notes.len())
            }
            (s, None) => status_word(s).to_string(),
        };
        let error = r.error_text();
        table.row(vec![
            r.op.clone(),
            r.schedule.clone(),
            r.shape.clone(),
            r.target.clone(),
            r.median_ms
                .map(|ms| fmt_time(Duration::from_secs_f64(ms / 1e3)))
                .unwrap_or_else(|| "-".to_string()),
            throughput,
            r.vs_first.map(fmt_ratio).unwrap_or_else(|| "-".to_string()),
            r.vs_reference
                .map(fmt_ratio)
                .unwrap_or_else(|| "-".to_string()),
            error,
            r.bounds.clone().unwrap_or_else(|| "-".to_string()),
            status,
        ]);
    }
    let mut out = table.render();
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            out.push_str(&n);
            out.push('\n');
        }
    }
    out
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Wrong => "WRONG",
        Status::Failed => "FAILED",
        Status::Refused => "refused",
    }
}

/// One target of a benchmark, for the header and the JSON.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetRecord {
    pub target: String,
    pub device: String,
    /// The device's driver and its version, where it tells.
    #[serde(default)]
    pub driver: Option<String>,
    /// `small` or `bench`.
    pub size: String,
    /// A wgpu target's runtime checks: `proven`, `checked` or `unchecked` (its `-checks=`
    /// option, else `--checked-shaders`/`--unchecked-shaders`); `None` elsewhere.
    #[serde(serialize_with = "checks_name", deserialize_with = "checks_of_name")]
    pub shader_checks: Option<ShaderChecks>,
}

/// A mode as its name (`"proven"`, ...), or null.
fn checks_name<S: serde::Serializer>(c: &Option<ShaderChecks>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_some(&c.map(ShaderChecks::name))
}

/// A mode from its name (or null).
fn checks_of_name<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<ShaderChecks>, D::Error> {
    let name: Option<String> = Option::deserialize(d)?;
    name.map(|n| n.parse().map_err(serde::de::Error::custom))
        .transpose()
}

/// One benchmark run: what `weft bench --json` writes and `weft report --from` reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchRun {
    pub weft_version: String,
    /// The commit the `weft` binary was built from ([`crate::COMMIT`]).
    #[serde(default)]
    pub commit: String,
    /// Seconds since the Unix epoch when the benchmark finished.
    pub unix_time: u64,
    /// What a row's `error` is measured against: 1, the tolerance of `weft_ops::check`
    /// (rows' errors are fractions of it). Older runs hold their relative tolerance.
    pub tolerance: f64,
    /// Runtime checks in wgpu shaders: `proven` (off where the bounds prover proves the
    /// kernel), `checked` or `unchecked` (forced).
    pub shader_checks: String,
    /// The targets, the first being the baseline of `vs_first`.
    pub targets: Vec<TargetRecord>,
    pub rows: Vec<Row>,
}

impl BenchRun {
    /// The baseline target of the `vs_first` ratios.
    pub fn first_target(&self) -> String {
        self.targets
            .first()
            .map(|t| t.target.clone())
            .unwrap_or_default()
    }

    /// `Err` (exit 1) when a row is wrong or failed; refused rows are not failures.
    pub fn verdict(&self) -> Result<(), CliError> {
        let count = |s: Status| self.rows.iter().filter(|r| r.status == s).count();
        let wrong = count(Status::Wrong) + count(Status::Failed);
        if wrong > 0 {
            return Err(CliError::Summary {
                wrong,
                refused: count(Status::Refused),
                total: self.rows.len(),
            });
        }
        Ok(())
    }
}
