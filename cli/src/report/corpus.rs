//! The corpus against PyTorch (issue 59): `weft report --corpus FILE[,FILE...]` reads the
//! JSON `scripts/speed.py --json` writes, one file per device call (batch 1 and batch 8,
//! or the fp32 and Vulkan columns, may come from separate calls), and keeps each file as
//! a [`CorpusRun`] in `report.json`. The page ([`super::corpus_page`]) merges the runs:
//! a later run's figure for the same GPU, model, batch and column replaces an earlier
//! one's, as [`super::supersede`] does for benchmark runs.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::CliError;

/// One `scripts/speed.py --json` file: its provenance and its rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CorpusRun {
    /// The file as it was named on the command line.
    pub file: String,
    /// `2026-11-29 05:05 UTC` (the script's `meta.date`); `None` for a file without
    /// `meta` (the script's `.partial` file of an older version, a call cut short).
    pub date: Option<String>,
    /// The GPU PyTorch ran on (`NVIDIA H200`).
    pub gpu: Option<String>,
    /// `weft --version` of the binary timed (`weft 0.1.0 (1a2b3c4d5e6f)`).
    pub weft: Option<String>,
    pub torch: Option<String>,
    pub transformers: Option<String>,
    /// The script's command line.
    pub command: Option<String>,
    pub rows: Vec<CorpusRow>,
}

/// One model at one batch in one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CorpusRow {
    /// The corpus name (`resnet50`, `bert_base`).
    pub model: String,
    pub batch: u32,
    /// `torchvision` or `hf` where the script recorded it.
    #[serde(default)]
    pub source: Option<String>,
    /// `torchscript17` or `dynamo18`: the exporter that wrote the ONNX file.
    #[serde(default)]
    pub exporter: Option<String>,
    /// Why the model has no figures at all (it failed to build, export or run).
    #[serde(default)]
    pub error: Option<String>,
    /// Every figure of the row: PyTorch's modes and weft's targets.
    pub cells: Vec<Cell>,
}

/// What was timed: a PyTorch mode or weft on one target in one element type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Column {
    /// PyTorch eager, fp16.
    Eager,
    /// PyTorch eager replayed as one CUDA graph.
    CudaGraph,
    /// torch.compile, `mode="reduce-overhead"`.
    TorchCompile,
    /// Inductor's kernels (default mode) captured into one CUDA graph by hand.
    InductorGraph,
    /// `weft model run --target T --dtype D`.
    Weft { target: String, dtype: String },
}

impl Column {
    /// The column's heading on the page.
    pub fn heading(&self) -> String {
        match self {
            Column::Eager => "PyTorch eager".into(),
            Column::CudaGraph => "PyTorch CUDA graph".into(),
            Column::TorchCompile => "torch.compile".into(),
            Column::InductorGraph => "Inductor in one graph".into(),
            Column::Weft { target, dtype } => format!("weft {target} {dtype}"),
        }
    }

    /// weft on `target` in `dtype`.
    pub fn weft(target: &str, dtype: &str) -> Column {
        Column::Weft {
            target: target.into(),
            dtype: dtype.into(),
        }
    }
}

/// One figure, or why there is none (weft refused the model on that target, PyTorch
/// could not capture it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub column: Column,
    /// Median time of one run of the whole model, in milliseconds.
    pub ms: Option<f64>,
    pub error: Option<String>,
}

/// PyTorch's columns: the key `speed.py` writes a time under, and the key of the error
/// it writes instead when that mode failed.
const TORCH: [(&str, &str, Column); 4] = [
    ("eager", "eager_error", Column::Eager),
    ("cuda_graph", "cuda_graph_error", Column::CudaGraph),
    ("torch_compile", "torch_compile_error", Column::TorchCompile),
    (
        "inductor_graph",
        "inductor_graph_error",
        Column::InductorGraph,
    ),
];

/// Reads one `scripts/speed.py --json` file: `{"meta": {...}, "rows": [...]}`, or the bare
/// list of rows an older script left in its `.partial` file (then date, GPU and command
/// are not known and the page says so).
pub(crate) fn read(path: &Path) -> Result<CorpusRun, CliError> {
    let bad = |reason: String| CliError::ReportInput {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let (meta, rows) = match value {
        Value::Array(rows) => (Map::new(), rows),
        Value::Object(mut o) => {
            let meta = match o.remove("meta") {
                Some(Value::Object(m)) => m,
                None => Map::new(),
                Some(_) => return Err(bad("`meta` is not an object".into())),
            };
            match o.remove("rows") {
                Some(Value::Array(rows)) => (meta, rows),
                _ => {
                    return Err(bad(
                        "not a `scripts/speed.py --json` file (no `rows` list)".into()
                    ));
                }
            }
        }
        _ => {
            return Err(bad(
                "not a `scripts/speed.py --json` file (neither an object nor a list)".into(),
            ));
        }
    };
    let text_of = |key: &str| meta.get(key).and_then(Value::as_str).map(str::to_string);
    let batch = meta.get("batch").and_then(Value::as_u64);
    let rows = rows
        .iter()
        .enumerate()
        .map(|(i, r)| row(r, batch).map_err(|e| bad(format!("row {}: {e}", i + 1))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CorpusRun {
        file: path.display().to_string(),
        date: text_of("date"),
        gpu: text_of("gpu"),
        weft: text_of("weft"),
        torch: text_of("torch"),
        transformers: text_of("transformers"),
        command: text_of("command"),
        rows,
    })
}

/// A time in ms: finite and positive, or the reason it is not one.
fn time(v: &Value, key: &str) -> Result<f64, String> {
    match v.as_f64() {
        Some(ms) if ms.is_finite() && ms > 0.0 => Ok(ms),
        _ => Err(format!("`{key}` is not a time in ms: {v}")),
    }
}

/// One row of the script: `model`, `batch` (else the file's), PyTorch's times or their
/// errors, and `weft_<target>_<dtype>` objects holding `ms` or `error`.
fn row(v: &Value, batch: Option<u64>) -> Result<CorpusRow, String> {
    let o = v.as_object().ok_or("not an object")?;
    let model = o
        .get("model")
        .and_then(Value::as_str)
        .ok_or("no `model` name")?
        .to_string();
    let batch = match o.get("batch").and_then(Value::as_u64).or(batch) {
        Some(b) if b > 0 && b <= u32::MAX as u64 => b as u32,
        _ => return Err(format!("{model}: no positive `batch`")),
    };
    let text = |key: &str| o.get(key).and_then(Value::as_str).map(str::to_string);
    let mut cells = Vec::new();
    for (key, error_key, column) in TORCH {
        let error = text(error_key);
        let ms = match o.get(key) {
            Some(Value::Null) | None => None,
            Some(t) => Some(time(t, key).map_err(|e| format!("{model}: {e}"))?),
        };
        if ms.is_some() || error.is_some() {
            cells.push(Cell { column, ms, error });
        }
    }
    for (key, value) in o {
        let Some(td) = key.strip_prefix("weft_") else {
            continue;
        };
        let (target, dtype) = td
            .rsplit_once('_')
            .ok_or_else(|| format!("{model}: `{key}` is not `weft_<target>_<dtype>`"))?;
        let ms = match value.get("ms") {
            Some(t) => Some(time(t, key).map_err(|e| format!("{model}: {e}"))?),
            None => None,
        };
        let error = value
            .get("error")
            .and_then(Value::as_str)
            .map(str::to_string);
        if ms.is_none() && error.is_none() {
            return Err(format!("{model}: `{key}` holds neither `ms` nor `error`"));
        }
        cells.push(Cell {
            column: Column::weft(target, dtype),
            ms,
            error,
        });
    }
    Ok(CorpusRow {
        model,
        batch,
        source: text("source"),
        exporter: text("exporter"),
        error: text("error"),
        cells,
    })
}

/// Adds `new` runs; a run already held (the same file read again from `report.json` and
/// from `--corpus`: the same date, GPU, command and rows) is kept once.
pub(crate) fn merge(runs: &mut Vec<CorpusRun>, new: Vec<CorpusRun>) {
    for run in new {
        let same = |r: &CorpusRun| {
            (&r.date, &r.gpu, &r.command, &r.rows) == (&run.date, &run.gpu, &run.command, &run.rows)
        };
        match runs.iter().position(same) {
            // The later name of the file is the one to show.
            Some(i) => runs[i] = run,
            None => runs.push(run),
        }
    }
}

/// A figure on the page: the cell and the run (its index in the page's order) it came
/// from.
#[derive(Clone, Debug)]
pub(crate) struct Shown<'a> {
    pub cell: &'a Cell,
    pub run: usize,
}

/// One model at one batch on one GPU, after merging every run.
#[derive(Clone, Debug)]
pub(crate) struct Merged<'a> {
    pub gpu: &'a str,
    pub model: &'a str,
    pub batch: u32,
    pub source: Option<&'a str>,
    pub exporter: Option<&'a str>,
    /// The latest run's error, when that run had nothing else for the model.
    pub error: Option<(&'a str, usize)>,
    pub cells: Vec<Shown<'a>>,
}

impl Merged<'_> {
    /// The figure (or error) of `column`.
    pub fn get(&self, column: &Column) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|s| s.cell.column == *column)
            .map(|s| s.cell)
    }

    /// The time of `column`, where one was measured.
    pub fn ms(&self, column: &Column) -> Option<f64> {
        self.get(column).and_then(|c| c.ms)
    }

    /// torch.compile's bar: the faster of reduce-overhead and Inductor's kernels in one
    /// graph (reduce-overhead's host-side guard checks can bound back-to-back calls of a
    /// small model), as `speed.py` takes it.
    pub fn bar(&self) -> Option<f64> {
        let a = self.ms(&Column::TorchCompile);
        let b = self.ms(&Column::InductorGraph);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// weft's CUDA f16 speed over the bar: the bar's time ÷ weft's.
    pub fn speed(&self) -> Option<f64> {
        Some(self.bar()? / self.ms(&Column::weft("cuda", "f16"))?)
    }
}

/// The name of a run's GPU on the page (rows of a file without `meta` are on a GPU
/// nobody recorded).
pub(crate) const UNKNOWN_GPU: &str = "GPU not recorded";

/// The runs in the order they were measured (dated runs by date; a run without a date
/// counts as older than every dated one: only old partial files lack it), then every
/// model × batch × GPU with each column's latest figure.
pub(crate) fn merged(runs: &[CorpusRun]) -> (Vec<&CorpusRun>, Vec<Merged<'_>>) {
    let mut order: Vec<&CorpusRun> = runs.iter().collect();
    order.sort_by(|a, b| a.date.cmp(&b.date));
    let mut out: Vec<Merged> = Vec::new();
    for (i, &run) in order.iter().enumerate() {
        let gpu = run.gpu.as_deref().map_or(UNKNOWN_GPU, super::gpu);
        for r in &run.rows {
            let at = out
                .iter()
                .position(|m| (m.gpu, m.model, m.batch) == (gpu, r.model.as_str(), r.batch));
            let m = match at {
                Some(j) => &mut out[j],
                None => {
                    out.push(Merged {
                        gpu,
                        model: &r.model,
                        batch: r.batch,
                        source: None,
                        exporter: None,
                        error: None,
                        cells: Vec::new(),
                    });
                    out.last_mut().expect("just pushed")
                }
            };
            m.source = r.source.as_deref().or(m.source);
            m.exporter = r.exporter.as_deref().or(m.exporter);
            m.error = r.error.as_deref().map(|e| (e, i));
            for cell in &r.cells {
                m.cells.retain(|s| s.cell.column != cell.column);
                m.cells.push(Shown { cell, run: i });
            }
        }
    }
    for m in &mut out {
        m.cells.sort_by(|a, b| a.cell.column.cmp(&b.cell.column));
    }
    (order, out)
}

/// The corpus's CNNs (torchvision's): the Vulkan ≥ 0.5× CUDA target is theirs. A row
/// that names its source is taken at its word; older files do not, and go by name.
pub(crate) fn is_cnn(m: &Merged) -> bool {
    const CNNS: [&str; 10] = [
        "resnet50",
        "inception_v3",
        "googlenet",
        "shufflenet_v2",
        "mobilenet_v2",
        "regnet_y_400mf",
        "densenet121",
        "efficientnet_b0",
        "resnext50_32x4d",
        "convnext_tiny",
    ];
    match m.source {
        Some(s) => s == "torchvision",
        None => CNNS.contains(&m.model),
    }
}
