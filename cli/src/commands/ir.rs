//! `weft ir`: the scheduled function, its trace, or its lowered kernels.

use crate::args::{IrArgs, SizeClass};
use crate::error::CliError;
use crate::select;

/// Prints the scheduled Func (`--lowered`: the kernels), after the trace with `--trace`.
pub fn ir(a: &IrArgs) -> Result<(), CliError> {
    let op = weft_ops::find(&a.workload.op)?;
    let shape = select::shape(op, a.workload.shape.as_deref(), SizeClass::Bench)?;
    let (w, schedule) = select::workload(op.name, a.workload.schedule.as_deref(), &shape)?;
    let scheduled = w.schedule(Some(schedule))?;
    let mut out = String::new();
    if a.trace {
        out.push_str(&format!(
            "# trace of `{schedule}` ({} at {})\n",
            op.name, w.shape
        ));
        out.push_str(&scheduled.trace().to_string());
        out.push('\n');
    }
    if a.lowered {
        out.push_str(&w.lower(schedule)?.to_string());
    } else {
        out.push_str(&scheduled.func().to_string());
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    print!("{out}");
    Ok(())
}
