//! The report's offline columns: every op × schedule compiled for GPUs this machine lacks
//! — AMD's gfx90a and gfx1100 through hipcc (registers, spills, LDS, occupancy) and Apple's
//! Metal through the MSL syntax check — at the op's first benchmark shape.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use weft_codegen_common::testing::Checked;
use weft_ops::OpSpec;
use weft_runtime::Target;

use crate::args::SizeClass;
use crate::error::CliError;
use crate::offline::compile_one;
use crate::select;

/// The AMD architectures the report compiles for: CDNA2 (MI200) and RDNA3.
pub const AMD_ARCHS: [&str; 2] = ["gfx90a", "gfx1100"];

/// How an offline compile ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OfflineStatus {
    Ok,
    /// The compiler rejected the source: a weft bug.
    Failed,
    /// A limit or a construct the target declines.
    Refused,
    /// The compiler is not installed here.
    Skipped,
}

/// One op × schedule compiled for one offline target.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OfflineRow {
    pub op: String,
    pub schedule: String,
    pub shape: String,
    /// `rocm -arch=gfx90a`, `metal`.
    pub target: String,
    pub status: OfflineStatus,
    pub message: Option<String>,
    /// The compiler (`hipcc, HIP 5.2...`, `g++ with weft's metal_stdlib shim`).
    pub compiler: Option<String>,
    pub kernels: usize,
    /// The worst kernel's resources (AMD only): most VGPRs, AGPRs, SGPRs, LDS bytes;
    /// spills summed over kernels (VGPR + SGPR); fewest waves per SIMD.
    pub vgprs: Option<u32>,
    pub agprs: Option<u32>,
    pub sgprs: Option<u32>,
    pub spills: Option<u32>,
    pub lds_bytes: Option<u32>,
    pub occupancy: Option<u32>,
}

impl OfflineRow {
    fn new(op: &OpSpec, schedule: &str, shape: &str, target: &str) -> OfflineRow {
        OfflineRow {
            op: op.name.to_string(),
            schedule: schedule.to_string(),
            shape: shape.to_string(),
            target: target.to_string(),
            status: OfflineStatus::Ok,
            message: None,
            compiler: None,
            kernels: 0,
            vgprs: None,
            agprs: None,
            sgprs: None,
            spills: None,
            lds_bytes: None,
            occupancy: None,
        }
    }

    fn failed(mut self, e: &CliError) -> OfflineRow {
        self.status = if matches!(e, CliError::Unavailable { .. }) {
            OfflineStatus::Skipped
        } else if e.is_refusal() {
            OfflineStatus::Refused
        } else {
            OfflineStatus::Failed
        };
        self.message = Some(e.to_string());
        self
    }
}

/// Compiles every op × schedule of `ops` for each AMD architecture and checks its MSL, in
/// parallel.
pub fn compile_all(ops: &[&'static OpSpec]) -> Result<Vec<OfflineRow>, CliError> {
    let mut cases = Vec::new();
    for op in ops {
        let Some(shape) = select::shapes(op, SizeClass::Bench)?.into_iter().next() else {
            continue;
        };
        for schedule in op.schedules {
            for arch in AMD_ARCHS {
                cases.push((*op, *schedule, shape.clone(), Some(arch)));
            }
            cases.push((*op, *schedule, shape.clone(), None));
        }
    }
    let progress = crate::progress::Progress::new(
        "report",
        "compiles",
        "[{elapsed_precise}] {msg:<9} {bar:30} {pos}/{len}",
        cases.len() as u64,
    );
    progress.phase("compiling offline", cases.len() as u64);
    let rows = cases
        .par_iter()
        .map(|(op, schedule, shape, arch)| {
            let row = match arch {
                Some(arch) => amd(op, schedule, shape, arch),
                None => msl(op, schedule, shape),
            };
            progress.inc(1);
            row
        })
        .collect();
    progress.finish();
    Ok(rows)
}

fn amd(op: &OpSpec, schedule: &str, shape: &weft_ops::Shape, arch: &str) -> OfflineRow {
    let target_text = format!("rocm -arch={arch}");
    let row = OfflineRow::new(op, schedule, &shape.to_string(), &target_text);
    let target = match Target::parse(&target_text) {
        Ok(t) => t,
        Err(e) => return row.failed(&e.into()),
    };
    match compile_one(op.name, Some(schedule), shape, None, &target) {
        Ok(c) => {
            let ks: Vec<_> = c.report.kernels.iter().map(|(_, r)| r).collect();
            OfflineRow {
                compiler: Some(c.report.compiler.clone()),
                kernels: ks.len(),
                vgprs: ks.iter().map(|r| r.vgprs).max(),
                agprs: ks.iter().filter_map(|r| r.agprs).max(),
                sgprs: ks.iter().map(|r| r.sgprs).max(),
                spills: Some(ks.iter().map(|r| r.vgpr_spills + r.sgpr_spills).sum()),
                lds_bytes: ks.iter().map(|r| r.lds_bytes).max(),
                occupancy: ks.iter().map(|r| r.occupancy).min(),
                ..row
            }
        }
        Err(e) => row.failed(&e),
    }
}

fn msl(op: &OpSpec, schedule: &str, shape: &weft_ops::Shape) -> OfflineRow {
    let row = OfflineRow::new(op, schedule, &shape.to_string(), "metal");
    let source = (|| -> Result<(String, usize), CliError> {
        let target = Target::parse("metal")?;
        let (w, schedule) = select::workload(op.name, Some(schedule), shape)?;
        let config = select::offline_config(&w, schedule, &target, None)?;
        let lowered = w.lower_with(schedule, config.as_ref())?;
        let opts = weft_codegen_metal::MetalOptions::default();
        let src = weft_codegen_metal::emit_lowered(&lowered, &opts).map_err(|e| {
            CliError::Source(Box::new(weft_runtime::SourceError::Emit {
                kernel: lowered.name.clone(),
                language: weft_runtime::SourceLanguage::Msl,
                source: e,
            }))
        })?;
        Ok((src.source, lowered.kernels.len()))
    })();
    let (source, kernels) = match source {
        Ok(s) => s,
        Err(e) => return row.failed(&e),
    };
    let row = OfflineRow {
        kernels,
        compiler: Some("host C++ compiler, -fsyntax-only against weft's metal_stdlib shim".into()),
        ..row
    };
    match weft_codegen_metal::syntax_check(&source) {
        Ok(Checked::Passed) => row,
        Ok(Checked::Skipped(reason)) => OfflineRow {
            status: OfflineStatus::Skipped,
            message: Some(reason),
            ..row
        },
        Err(log) => OfflineRow {
            status: OfflineStatus::Failed,
            message: Some(log.lines().take(8).collect::<Vec<_>>().join("\n")),
            ..row
        },
    }
}
