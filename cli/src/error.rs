//! The CLI's errors and the exit status each one maps to.

use std::path::PathBuf;

use thiserror::Error;
use weft_ir::echo;
use weft_ops::OpError;
use weft_runtime::reference::ReferenceError;
use weft_runtime::{DeviceError, SourceError, TargetError};

/// Exit status of a correct run.
pub const EXIT_OK: u8 = 0;
/// Exit status of a wrong result, a kernel that failed on its device, or stdout that
/// could not be written (a full disk).
pub const EXIT_WRONG: u8 = 1;
/// Exit status of bad input, an unavailable target, or a kernel a target refuses.
pub const EXIT_INPUT: u8 = 2;

/// Everything a `weft` command can fail with.
#[derive(Debug, Error)]
pub enum CliError {
    /// Unknown op or schedule, a bad `--shape`, or a schedule that does not apply.
    #[error(transparent)]
    Op(#[from] OpError),
    /// A target string that does not parse.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// A `--shape` parameter (with `--all` and no `--op`) that no op has.
    #[error(
        "shape parameter {} belongs to no op; parameters are: {valid}",
        echo(param)
    )]
    ShapeParam { param: String, valid: String },
    /// A `--schedule` (with `--all` and no `--op`) that no op has.
    #[error("no op has a schedule {}; schedules are: {valid}", echo(schedule))]
    NoOpHasSchedule { schedule: String, valid: String },
    /// A target this machine cannot run.
    #[error("target `{target}` is not available here: {reason}\navailable targets: {available}")]
    Unavailable {
        target: String,
        reason: String,
        available: String,
    },
    /// `weft compile` for a target that has no offline compiler with a resource report.
    #[error(
        "target `{target}` does not compile offline: `weft compile` takes `rocm` targets \
         (`rocm`, `rocm -arch=gfx1100`); `weft run` measures targets this machine has"
    )]
    NoOfflineCompiler { target: String },
    /// A kernel the target will not emit (over a limit, or a construct it lacks).
    #[error("{0}")]
    Source(Box<SourceError>),
    /// A device failed: `context` says what was being done.
    #[error("{context}: {source}")]
    Device {
        context: String,
        #[source]
        source: Box<DeviceError>,
    },
    /// A reference measurement (cuBLAS, copy) failed.
    #[error("{context}: {source}")]
    Reference {
        context: String,
        #[source]
        source: Box<ReferenceError>,
    },
    /// The output differs from the reference.
    /// `error` is the output's error as a fraction of the tolerance (`weft_ops::check`:
    /// above 1 here); `detail` says where and by how much.
    #[error("wrong result for {what}: {detail}")]
    Wrong {
        what: String,
        error: f64,
        detail: String,
    },
    /// Stdout could not be written (a full disk, a closed pipe: see `crate::out`).
    #[error("writing to stdout: {0}")]
    Stdout(#[source] std::io::Error),
    /// An output path (`--json`, `--save`, `--out`) that cannot be written, found before
    /// any work: `problem` says why.
    #[error("{flag} `{}`: {problem}", path.display())]
    OutputPath {
        flag: &'static str,
        path: PathBuf,
        problem: String,
    },
    /// `weft sweep` was given something it cannot measure.
    #[error("weft sweep: {reason}")]
    Sweep { reason: String },
    /// A file could not be written.
    #[error("writing `{path}`: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A `.npy` file of `--inputs` or `--save`.
    #[error(transparent)]
    Npy(Box<crate::npy::NpyError>),
    /// Tuning records could not be read or written.
    #[error(transparent)]
    Records(#[from] weft_tune::RecordError),
    /// Tuning could not start.
    #[error(transparent)]
    Tune(#[from] weft_tune::TuneError),
    /// A `--config` that is not a config of the template.
    #[error("--config for `{op}/{schedule}`: {reason}")]
    Config {
        op: String,
        schedule: String,
        reason: String,
    },
    /// `--config` for a schedule that is not a template; `takes` says which schedule of
    /// the op does (or that none does).
    #[error(
        "--config for `{op}/{schedule}`: schedule `{schedule}` is not a template, so it takes \
         no config; {takes}"
    )]
    NotATemplate {
        op: String,
        schedule: String,
        takes: String,
    },
    /// `weft tune` for an op without a template: nothing to search.
    #[error(
        "`{op}` has nothing to tune: none of its schedules ({schedules}) is a template, the \
         only kind with a config space for `weft tune` to search and `--config` to set; they \
         run as they are (`weft run --op {op} --schedule S`). Ops with a template: {templates}"
    )]
    NothingToTune {
        op: String,
        schedules: String,
        templates: String,
    },
    /// No default place for tuning records (no HOME, XDG_CACHE_HOME or WEFT_RECORDS).
    #[error("no place for tuning records: set WEFT_RECORDS or HOME, or pass --records FILE")]
    NoRecordsPath,
    /// A `weft report --from` file that cannot be read as a benchmark run or a report.
    #[error("reading `{path}`: {reason}")]
    ReportInput { path: PathBuf, reason: String },
    /// `weft report --no-run --no-compile` with nothing to read.
    #[error(
        "nothing to report: no benchmark ran (--no-run), nothing was compiled (--no-compile) and no --from, --corpus or --generation file was given"
    )]
    EmptyReport,
    /// A chart could not be drawn or written.
    #[error(transparent)]
    Chart(Box<crate::charts::ChartError>),
    /// JSON serialisation failed.
    #[error("serialising JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A model file, or its inputs or outputs as `.npy`, could not be read or written
    /// (`weft model`).
    #[error(transparent)]
    ModelFile(#[from] crate::models::ModelFileError),
    /// A whole model could not be compiled, loaded or run; `context` says what was being
    /// done, where that is not the whole command.
    #[error("{}{source}", context_prefix(.context))]
    Model {
        context: Option<String>,
        #[source]
        source: Box<weft_model::ModelError>,
    },
    /// A model could not be written as ONNX (`weft model export`).
    #[error("writing `{}`: {source}", .path.display())]
    Export {
        path: PathBuf,
        #[source]
        source: weft_onnx::ExportError,
    },
    /// An option that does not apply where it was given.
    #[error("{0}")]
    Usage(String),
    /// ONNX Runtime cannot be reached (`weft model check`): `what` names the program or
    /// Python package that is missing.
    #[error(
        "weft model check runs ONNX Runtime through Python, and {what}: install what it \
         lacks (`pip install onnxruntime onnx numpy`), or name another Python with --python"
    )]
    NoOrt { what: String },
    /// ONNX Runtime failed on a model (`weft model check`): `detail` is its last words.
    #[error("ONNX Runtime could not run `{}`: {detail}", model.display())]
    Ort { model: PathBuf, detail: String },
    /// A measurement asked for the whole model's time came back without it (a weft bug).
    #[error("the whole model was not timed")]
    NotTimed,
    /// Some of many runs (`run --all`, `bench`) did not pass; each was reported already.
    #[error("{wrong} wrong or failed and {refused} refused, of {total} runs")]
    Summary {
        wrong: usize,
        refused: usize,
        total: usize,
    },
}

/// `context: ` where there is one.
fn context_prefix(context: &Option<String>) -> String {
    context.as_ref().map_or(String::new(), |c| format!("{c}: "))
}

impl CliError {
    /// A model that failed as a whole command.
    pub fn model(source: weft_model::ModelError) -> CliError {
        CliError::Model {
            context: None,
            source: Box::new(source),
        }
    }

    /// The error of an output `error` away from the reference, for `what`.
    pub fn wrong(what: impl Into<String>, error: &weft_ops::check::Error) -> CliError {
        CliError::Wrong {
            what: what.into(),
            error: error.ratio,
            detail: format!("error {error}"),
        }
    }

    /// A device error with what was being done.
    pub fn device(context: impl Into<String>, source: DeviceError) -> CliError {
        CliError::Device {
            context: context.into(),
            source: Box::new(source),
        }
    }

    /// The exit status: [`EXIT_WRONG`] for wrong results, device failures, runs that
    /// computed an index out of range and a stdout that cannot be written,
    /// [`EXIT_INPUT`] for everything the user can fix by asking differently (including a
    /// target that is absent or refuses the kernel).
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Wrong { .. } | CliError::Stdout(_) => EXIT_WRONG,
            CliError::Device { source, .. } => match **source {
                _ if source.is_unavailable() => EXIT_INPUT,
                DeviceError::Limits(_) | DeviceError::Emit { .. } => EXIT_INPUT,
                _ => EXIT_WRONG,
            },
            CliError::Reference { source, .. } if !source.is_unavailable() => EXIT_WRONG,
            // A run that computed what ONNX makes an error (an index out of range).
            CliError::Model { source, .. } if source.is_run_failure() => EXIT_WRONG,
            CliError::Summary { wrong, .. } if *wrong > 0 => EXIT_WRONG,
            _ => EXIT_INPUT,
        }
    }

    /// True for a kernel the target declines (limits, unsupported constructs) or cannot
    /// run at all: a benchmark row that says why rather than a failure.
    pub fn is_refusal(&self) -> bool {
        self.exit_code() == EXIT_INPUT
    }
}

impl From<weft_model::ModelError> for CliError {
    fn from(e: weft_model::ModelError) -> CliError {
        CliError::model(e)
    }
}

impl From<crate::npy::NpyError> for CliError {
    fn from(e: crate::npy::NpyError) -> CliError {
        CliError::Npy(Box::new(e))
    }
}

impl From<weft_tune::measure::MeasureError> for CliError {
    fn from(e: weft_tune::measure::MeasureError) -> CliError {
        use weft_tune::measure::MeasureError;
        match e {
            MeasureError::Op(op) => CliError::Op(op),
            MeasureError::Device { what, source } => CliError::device(what, source),
        }
    }
}

impl From<SourceError> for CliError {
    fn from(e: SourceError) -> CliError {
        CliError::Source(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        let wrong = CliError::wrong("x", &weft_ops::check::Error::infinite());
        assert_eq!(wrong.exit_code(), EXIT_WRONG);
        assert!(wrong.to_string().contains("NaN"));
        let bad_op = CliError::Op(OpError::UnknownOp("nope".into()));
        assert_eq!(bad_op.exit_code(), EXIT_INPUT);
        let unavailable = CliError::device(
            "opening",
            DeviceError::Unavailable {
                target: "metal".into(),
                reason: "no".into(),
            },
        );
        assert_eq!(unavailable.exit_code(), EXIT_INPUT);
        assert!(unavailable.is_refusal());
        let failed = CliError::device("timing", DeviceError::NoIterations);
        assert_eq!(failed.exit_code(), EXIT_WRONG);
        let summary = CliError::Summary {
            wrong: 0,
            refused: 1,
            total: 3,
        };
        assert_eq!(summary.exit_code(), EXIT_INPUT);
    }
}
