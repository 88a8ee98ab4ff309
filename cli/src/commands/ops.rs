//! `weft ops`: the workloads and their schedules.

use weft_ops::{OPS, Shape};

use crate::error::CliError;
use crate::out::out;

/// Prints each op: summary, seed, shape parameters with defaults, schedules (best
/// marked), its benchmark and small shapes, and its template's schedule space.
pub fn ops() -> Result<(), CliError> {
    let mut out = String::new();
    for op in OPS {
        let schedules: Vec<String> = op
            .schedules
            .iter()
            .map(|s| {
                if *s == op.best {
                    format!("{s} (best)")
                } else {
                    s.to_string()
                }
            })
            .collect();
        let shapes = |list: &[&[i64]]| -> String {
            list.iter()
                .map(|v| match Shape::from_values(op, v) {
                    Ok(s) => s.to_string(),
                    Err(e) => e.to_string(),
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        out.push_str(&format!("{}: {} (seed {})\n", op.name, op.summary, op.seed));
        out.push_str(&format!("  shape      {}\n", Shape::defaults(op)));
        out.push_str(&format!("  schedules  {}\n", schedules.join(", ")));
        out.push_str(&format!("  bench      {}\n", shapes(op.bench)));
        out.push_str(&format!("  small      {}\n", shapes(op.small)));
        if let Some(t) = op.template {
            let n = (t.space)(&weft_codegen_common::TargetLimits::cuda()).len();
            out.push_str(&format!(
                "  template   `{}`: {n} configs for cuda (weft tune --op {} --list --target T)\n",
                t.schedule, op.name
            ));
        }
    }
    out!("{out}")?;
    Ok(())
}
