//! `weft emit`: the source a target compiles, emitted without a device.

use weft_runtime::Target;

use crate::args::{EmitArgs, SizeClass};
use crate::error::CliError;
use crate::out::out;
use crate::select;

/// Prints every kernel of the lowered schedule in the target's language, in launch
/// order, as one source that compiles (`Target::emit_function`); for `cpu`, the lowered
/// IR the interpreter runs.
pub fn emit(a: &EmitArgs) -> Result<(), CliError> {
    let target = Target::parse(&a.target)?;
    let op = weft_ops::find(&a.workload.op)?;
    let shape = select::shape(op, a.workload.shape.as_deref(), SizeClass::Bench)?;
    let (w, schedule) = select::workload(op.name, a.workload.schedule.as_deref(), &shape)?;
    let config = select::offline_config(&w, schedule, &target, a.workload.config.as_deref())?;
    let lowered = w.lower_with(schedule, config.as_ref())?;
    let mut out = if target.emit_language().is_none() {
        lowered.to_string()
    } else {
        // One source for every kernel: a translation unit, a library or a WGSL module
        // with an entry point per kernel, which compiles as it is.
        target.emit_function(&lowered)?.source
    };
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out!("{out}")?;
    Ok(())
}
