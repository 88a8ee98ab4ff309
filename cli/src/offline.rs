//! Compiling one op × schedule for a GPU this machine lacks (`rocm` targets, through
//! hipcc): what `weft compile` prints and `weft report`'s AMD rows hold.

use weft_ops::Shape;
use weft_runtime::rocm::{OfflineReport, compile_offline};
use weft_runtime::{DeviceError, Target};

use crate::error::CliError;
use crate::select;

/// One schedule compiled offline: which schedule, and what the compiler reported.
pub(crate) struct Compiled {
    pub schedule: &'static str,
    pub report: OfflineReport,
}

pub(crate) fn compile_one(
    op: &str,
    schedule: Option<&str>,
    shape: &Shape,
    config: Option<&str>,
    target: &Target,
) -> Result<Compiled, CliError> {
    let (w, schedule) = select::workload(op, schedule, shape)?;
    let config = select::offline_config(&w, schedule, target, config)?;
    let lowered = w.lower_with(schedule, config.as_ref())?;
    let report = compile_offline(target, &lowered).map_err(|e| compile_error(target, e))?;
    Ok(Compiled { schedule, report })
}

fn compile_error(target: &Target, e: DeviceError) -> CliError {
    if e.is_unavailable() {
        CliError::Unavailable {
            target: target.to_string(),
            reason: e.to_string(),
            available: select::available_list(),
        }
    } else {
        CliError::device(format!("compiling for `{target}`"), e)
    }
}
