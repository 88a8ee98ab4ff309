//! `weft emit`: the source a target compiles, emitted without a device.

use weft_runtime::Target;

use crate::args::{EmitArgs, SizeClass};
use crate::error::CliError;
use crate::select;

/// Prints every kernel of the lowered schedule in the target's language, in launch
/// order; for `cpu`, the lowered IR the interpreter runs.
pub fn emit(a: &EmitArgs) -> Result<(), CliError> {
    let target = Target::parse(&a.target)?;
    let op = weft_ops::find(&a.workload.op)?;
    let shape = select::shape(op, a.workload.shape.as_deref(), SizeClass::Bench)?;
    let (w, schedule) = select::workload(op.name, a.workload.schedule.as_deref(), &shape)?;
    let config = select::offline_config(&w, schedule, &target, a.workload.config.as_deref())?;
    let lowered = w.lower_with(schedule, config.as_ref())?;
    let mut out = String::new();
    if target.emit_language().is_none() {
        out.push_str(&lowered.to_string());
    } else {
        for (i, kernel) in lowered.kernels.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&target.emit_source(kernel)?.source);
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    print!("{out}");
    Ok(())
}
