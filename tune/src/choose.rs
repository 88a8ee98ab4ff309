//! Which config a template runs with: a matching tuning record, else its default.

use std::fmt;
use std::path::PathBuf;

use weft_codegen_common::TargetLimits;
use weft_ops::Workload;
use weft_ops::templates::Config;
use weft_runtime::Target;

use crate::{RecordKey, Records};

/// Where a config came from.
#[derive(Clone, Debug, PartialEq)]
pub enum ChoiceSource {
    /// A tuning record for this op, shape, target, device and weft version.
    Record {
        path: PathBuf,
        date: String,
        time_us: f64,
    },
    /// The template's default for the target's resources; `why` says why no record was
    /// used.
    Default { why: String },
    /// Given on the command line (`--config`).
    Given,
}

impl fmt::Display for ChoiceSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChoiceSource::Record {
                path,
                date,
                time_us,
            } => {
                let time = if *time_us >= 1000.0 {
                    format!("{:.3} ms", time_us / 1000.0)
                } else {
                    format!("{time_us:.1} µs")
                };
                write!(
                    f,
                    "tuned: record of {date} in {} ({time} when tuned)",
                    path.display()
                )
            }
            ChoiceSource::Default { why } => write!(f, "default ({why})"),
            ChoiceSource::Given => f.write_str("given with --config"),
        }
    }
}

/// A config and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub config: Config,
    pub source: ChoiceSource,
}

/// The record key of `w` under `schedule` on `target`'s `device`.
pub fn key(w: &Workload, schedule: &str, target: &Target, device: &str) -> RecordKey {
    RecordKey {
        op: w.op.name.to_string(),
        schedule: schedule.to_string(),
        shape: w.shape.to_string(),
        dtype: w.output.dtype().tvm_name().to_string(),
        target: target.to_string(),
        device: device.to_string(),
        version: crate::VERSION.to_string(),
    }
}

/// The config `schedule` of `w` runs with on `target`'s `device` (with `limits`): the
/// newest matching record of `records`, else the template's default for the target's
/// resources. `None` when `schedule` is not a template.
pub fn choose(
    w: &Workload,
    schedule: &str,
    target: &Target,
    device: &str,
    limits: &TargetLimits,
    records: Option<&Records>,
) -> Option<Choice> {
    let spec = w.template(schedule)?;
    let default = |why: String| Choice {
        config: (spec.default)(&crate::resources(target, limits)),
        source: ChoiceSource::Default { why },
    };
    let Some(records) = records else {
        return Some(default("no tuning record file".into()));
    };
    let key = key(w, schedule, target, device);
    Some(match records.find(&key) {
        Some(r) => match Config::parse(&r.config) {
            Ok(config) => Choice {
                config,
                source: ChoiceSource::Record {
                    path: records.path().to_path_buf(),
                    date: r.date(),
                    time_us: r.time_us,
                },
            },
            Err(e) => default(format!(
                "the record in {} has an unreadable config: {e}",
                records.path().display()
            )),
        },
        None => default(format!(
            "no tuning record for {} at {} on {device} in {}",
            w.op.name,
            w.shape,
            records.path().display()
        )),
    })
}
