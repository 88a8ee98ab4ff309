//! `weft compile`: compile for a GPU this machine lacks and print what each kernel uses of
//! it — Triton's `n_regs`/`n_spills`, for AMD. Only `rocm` targets compile offline (with
//! hipcc); a target that runs here is measured by `weft run` instead.

use rayon::prelude::*;
use weft_codegen_cuda::hipcc::KernelResources;
use weft_ops::Shape;

use weft_runtime::Target;

use crate::args::{CompileArgs, SizeClass};
use crate::error::CliError;
use crate::format::{Table, fmt_time};
use crate::offline::{Compiled, compile_one};
use crate::out::{out, outln};
use crate::select;

/// Compiles one schedule (or, with `--all`, every one) and prints a table of the kernels'
/// registers, spills, LDS and occupancy.
pub fn compile(a: &CompileArgs) -> Result<(), CliError> {
    let target = Target::parse(&a.target)?;
    if weft_runtime::rocm::arch(&target).is_none() {
        return Err(CliError::NoOfflineCompiler {
            target: target.to_string(),
        });
    }
    if a.all {
        return compile_all(a, &target);
    }
    let op = weft_ops::find(a.op.as_deref().unwrap_or_default())?;
    let shape = select::shape(op, a.shape.as_deref(), SizeClass::Bench)?;
    let r = compile_one(
        op.name,
        a.schedule.as_deref(),
        &shape,
        a.config.as_deref(),
        &target,
    )?;
    outln!("op        {}", op.name)?;
    outln!("schedule  {}", r.schedule)?;
    outln!("shape     {shape}")?;
    outln!("target    {target} (compiled offline, not run)")?;
    outln!("compiler  {}", r.report.compiler)?;
    outln!(
        "compiled  {} kernel(s) for {} in {}, code object {} bytes",
        r.report.kernels.len(),
        r.report.arch,
        fmt_time(r.report.compile_time),
        r.report.code_object_bytes
    )?;
    outln!()?;
    let mut table = resource_table(&["kernel"]);
    for (kernel, res) in &r.report.kernels {
        table.row(resource_row(vec![kernel.clone()], res));
    }
    out!("{}", table.render())?;
    Ok(())
}

/// Every op × schedule at its seed size, compiled on every core; one table, failures on
/// stderr.
fn compile_all(a: &CompileArgs, target: &Target) -> Result<(), CliError> {
    let ops = select::ops(a.op.as_slice())?;
    let mut cases: Vec<(&'static str, &'static str, Shape)> = Vec::new();
    for op in ops {
        let shape = select::shape(op, a.shape.as_deref(), SizeClass::Bench)?;
        for schedule in op.schedules {
            if a.schedule.as_deref().is_none_or(|s| s == *schedule) {
                cases.push((op.name, schedule, shape.clone()));
            }
        }
    }
    let results: Vec<Result<Compiled, CliError>> = cases
        .par_iter()
        .map(|(op, schedule, shape)| {
            compile_one(op, Some(schedule), shape, a.config.as_deref(), target)
        })
        .collect();
    outln!("target {target} (compiled offline, not run)")?;
    let mut table = resource_table(&["op", "schedule", "kernel"]);
    let (mut failed, mut refused) = (0, 0);
    for ((op, schedule, _), result) in cases.iter().zip(results) {
        match result {
            Ok(r) => {
                for (kernel, res) in &r.report.kernels {
                    let cells = vec![op.to_string(), schedule.to_string(), kernel.clone()];
                    table.row(resource_row(cells, res));
                }
            }
            Err(e) => {
                let status = if e.is_refusal() {
                    refused += 1;
                    "REFUSED"
                } else {
                    failed += 1;
                    "FAILED"
                };
                table.row(vec![op.to_string(), schedule.to_string(), status.into()]);
                eprintln!("weft: {op}/{schedule}: {e}");
            }
        }
    }
    out!("{}", table.render())?;
    if failed + refused > 0 {
        return Err(CliError::Summary {
            wrong: failed,
            refused,
            total: cases.len(),
        });
    }
    Ok(())
}

const RESOURCE_COLUMNS: [&str; 8] = [
    "VGPRs",
    "AGPRs",
    "SGPRs",
    "VGPR spills",
    "SGPR spills",
    "scratch B/lane",
    "LDS B",
    "waves/SIMD",
];

fn resource_table(leading: &[&str]) -> Table {
    let header: Vec<&str> = leading.iter().copied().chain(RESOURCE_COLUMNS).collect();
    let numbers: Vec<usize> = (leading.len()..header.len()).collect();
    Table::new(&header).align_right(&numbers)
}

fn resource_row(mut cells: Vec<String>, r: &KernelResources) -> Vec<String> {
    cells.extend([
        r.vgprs.to_string(),
        r.agprs.map_or("-".to_string(), |a| a.to_string()),
        r.sgprs.to_string(),
        r.vgpr_spills.to_string(),
        r.sgpr_spills.to_string(),
        r.scratch_bytes.to_string(),
        r.lds_bytes.to_string(),
        r.occupancy.to_string(),
    ]);
    cells
}
