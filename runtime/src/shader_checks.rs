//! Whether wgpu guards a kernel's memory accesses at run time.
//!
//! WebGPU promises that a shader never touches memory outside its buffers, so naga
//! compiles every access with a bounds check (and every integer division with a guard)
//! unless the module is created as trusted. weft proves its kernels' accesses in bounds at
//! compile time ([`weft_ir::bounds`]) and drops the checks only for a kernel whose every
//! access is proven and whose every integer division has a divisor that is neither 0 nor
//! −1; any other kernel keeps them. weft's loops are all counted `for` loops with constant
//! extents, so naga's guard against infinite loops goes with them.

use std::fmt;
use std::str::FromStr;

use weft_ir::bounds::{BoundsReport, prove};
use weft_ir::kernel::Kernel;

/// Which kernels get runtime checks on a wgpu target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ShaderChecks {
    /// Off for kernels the bounds prover proves, on for the others (the default).
    #[default]
    Proven,
    /// On for every kernel (`--checked-shaders`).
    Checked,
    /// Off for every kernel, proven or not (`--unchecked-shaders`; benchmarks only: an
    /// out-of-bounds access is then undefined behaviour on the GPU, not a clamped one).
    Unchecked,
}

impl ShaderChecks {
    /// The name used on the command line and in tables: `proven`, `checked`, `unchecked`.
    pub fn name(self) -> &'static str {
        match self {
            ShaderChecks::Proven => "proven",
            ShaderChecks::Checked => "checked",
            ShaderChecks::Unchecked => "unchecked",
        }
    }
}

impl fmt::Display for ShaderChecks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ShaderChecks {
    type Err = String;
    fn from_str(s: &str) -> Result<ShaderChecks, String> {
        match s {
            "proven" => Ok(ShaderChecks::Proven),
            "checked" => Ok(ShaderChecks::Checked),
            "unchecked" => Ok(ShaderChecks::Unchecked),
            _ => Err(format!(
                "unknown shader-check mode `{s}`; modes are: proven, checked, unchecked"
            )),
        }
    }
}

/// What [`decide`] chose for one kernel, and why.
#[derive(Clone, Debug)]
pub struct ChecksDecision {
    /// The kernel is created without runtime checks.
    pub unchecked: bool,
    /// The prover's report (`None` where the mode did not ask for it).
    pub report: Option<BoundsReport>,
    pub mode: ShaderChecks,
}

impl ChecksDecision {
    /// One line: `runtime checks off: all 14 accesses proven in bounds`, or why they stay.
    pub fn reason(&self) -> String {
        match (self.mode, &self.report) {
            (ShaderChecks::Checked, _) => "runtime checks on (--checked-shaders)".to_string(),
            (ShaderChecks::Unchecked, _) => {
                "runtime checks off (--unchecked-shaders, not proven)".to_string()
            }
            (ShaderChecks::Proven, Some(r)) if self.unchecked => {
                format!("runtime checks off: {}", r.summary())
            }
            (ShaderChecks::Proven, Some(r)) => format!("runtime checks kept: {}", r.summary()),
            (ShaderChecks::Proven, None) => "runtime checks kept".to_string(),
        }
    }
}

/// Decides whether `kernel` runs with runtime checks under `mode` (proving it only in
/// [`ShaderChecks::Proven`]).
pub fn decide(kernel: &Kernel, mode: ShaderChecks) -> ChecksDecision {
    match mode {
        ShaderChecks::Checked | ShaderChecks::Unchecked => ChecksDecision {
            unchecked: mode == ShaderChecks::Unchecked,
            report: None,
            mode,
        },
        ShaderChecks::Proven => ChecksDecision::from_report(mode, prove(kernel)),
    }
}

impl ChecksDecision {
    /// The decision under `mode` for a kernel the prover reported on.
    pub fn from_report(mode: ShaderChecks, report: BoundsReport) -> ChecksDecision {
        let unchecked = match mode {
            ShaderChecks::Proven => report.is_proven(),
            ShaderChecks::Checked => false,
            ShaderChecks::Unchecked => true,
        };
        ChecksDecision {
            unchecked,
            report: Some(report),
            mode,
        }
    }
}
