//! Which config a template runs with: a matching tuning record, else its default.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use weft_codegen_common::TargetLimits;
use weft_kernels::Config;
use weft_ops::Workload;
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

/// A run this many times slower or faster than its record's tuning time is flagged
/// ([`ChoiceSource::disagreement`]). Tuning and later runs of one record agree within a
/// few percent when the device behaves the same; a factor of 1.5 is another state of the
/// device in one of the two (on the H100's Vulkan driver about one process in five runs a
/// conv 4x slower, with the clocks unchanged) or a record tuned under other conditions.
pub const DISAGREEMENT_FACTOR: f64 = 1.5;

impl ChoiceSource {
    /// `measured` ÷ this record's time when tuned, where the two differ by a factor of
    /// at least [`DISAGREEMENT_FACTOR`] either way; `None` otherwise and for other sources.
    pub fn disagreement(&self, measured: Duration) -> Option<f64> {
        let measured_us = measured.as_secs_f64() * 1e6;
        match self {
            ChoiceSource::Record { time_us, .. } if *time_us > 0.0 && measured_us > 0.0 => {
                let x = measured_us / time_us;
                (x >= DISAGREEMENT_FACTOR || x * DISAGREEMENT_FACTOR <= 1.0).then_some(x)
            }
            _ => None,
        }
    }

    /// What to tell a user about a run `ratio` times its record's tuning time.
    pub fn disagreement_note(ratio: f64) -> String {
        if ratio >= 1.0 {
            format!(
                "{ratio:.1}x slower than when tuned: this run found the device in a slower \
                 state (rerun it), or the record is stale (retune)"
            )
        } else {
            format!(
                "{:.1}x faster than when tuned: the tuning ran in a slower state, so the \
                 record may not hold the best config (retune)",
                1.0 / ratio
            )
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
    // No record: the template's rule for this shape and target (or its default).
    let default = |why: String| {
        let (config, how) = spec.untuned(limits, &w.shape);
        Choice {
            config,
            source: ChoiceSource::Default {
                why: format!("{why}; {how}"),
            },
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn us(t: f64) -> Duration {
        Duration::from_secs_f64(t * 1e-6)
    }

    fn record(time_us: f64) -> ChoiceSource {
        ChoiceSource::Record {
            path: PathBuf::from("records.json"),
            date: "2026-11-23".into(),
            time_us,
        }
    }

    #[test]
    fn runs_far_from_their_record_are_flagged() {
        let x = record(47.6)
            .disagreement(us(193.2))
            .expect("4x slower is flagged");
        assert!((x - 193.2 / 47.6).abs() < 1e-9, "{x}");
        assert!(ChoiceSource::disagreement_note(x).starts_with("4.1x slower than when tuned"));
        let x = record(67.5)
            .disagreement(us(22.7))
            .expect("3x faster is flagged");
        assert!(ChoiceSource::disagreement_note(x).starts_with("3.0x faster than when tuned"));
        // Run-to-run spread is not.
        assert_eq!(record(18.6).disagreement(us(20.0)), None);
        assert_eq!(record(20.0).disagreement(us(18.6)), None);
        assert_eq!(
            record(47.6).disagreement(us(47.6 * DISAGREEMENT_FACTOR * 0.99)),
            None
        );
        // No time to compare with.
        assert_eq!(record(0.0).disagreement(us(10.0)), None);
        assert_eq!(record(10.0).disagreement(us(0.0)), None);
        assert_eq!(ChoiceSource::Given.disagreement(us(1e9)), None);
        let default = ChoiceSource::Default {
            why: "no record".into(),
        };
        assert_eq!(default.disagreement(us(1e9)), None);
    }
}
