//! `weft ir`: the scheduled function, its trace, or its lowered kernels.

use crate::args::{IrArgs, SizeClass};
use crate::error::CliError;
use crate::out::out;
use crate::select;

/// Prints the scheduled Func (`--lowered`: the kernels), after the trace with `--trace`.
/// A template is printed with `--config`, else its default config for CUDA.
pub fn ir(a: &IrArgs) -> Result<(), CliError> {
    let op = weft_ops::find(&a.workload.op)?;
    let shape = select::shape(op, a.workload.shape.as_deref(), SizeClass::Bench)?;
    let (w, schedule) = select::workload(op.name, a.workload.schedule.as_deref(), &shape)?;
    let cuda = weft_runtime::Target::parse("cuda")?;
    let config = select::offline_config(&w, schedule, &cuda, a.workload.config.as_deref())?;
    let scheduled = match &config {
        Some(c) => weft_ir::schedule::Schedule::new(w.scheduled(schedule, Some(c))?),
        None => w.schedule(Some(schedule))?,
    };
    let mut out = String::new();
    if let Some(c) = &config {
        out.push_str(&format!("# template config {c}\n"));
    }
    if a.trace {
        out.push_str(&format!(
            "# trace of `{schedule}` ({} at {})\n",
            op.name, w.shape
        ));
        out.push_str(&scheduled.trace().to_string());
        out.push('\n');
    }
    if a.lowered {
        let lowered =
            weft_ir::lower::lower(scheduled.func()).map_err(|source| weft_ops::OpError::Lower {
                op: op.name.to_string(),
                schedule: schedule.to_string(),
                shape: w.shape.to_string(),
                source: Box::new(source),
            })?;
        // The bounds prover's verdict per kernel, as comments: what lets wgpu targets
        // drop their runtime checks, and a bug report on any target.
        for report in weft_ir::bounds::prove_all(&lowered) {
            for l in report.to_string().lines() {
                out.push_str(&format!("# bounds: {}\n", l.trim_start()));
            }
        }
        out.push_str(&lowered.to_string());
    } else {
        out.push_str(&scheduled.func().to_string());
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out!("{out}")?;
    Ok(())
}
