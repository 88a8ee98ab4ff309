//! The `rocm` target: AMD GPUs through HIP, compiled offline.
//!
//! No ROCm runtime is linked (none exists where weft is tested), so `rocm` is never
//! opened as a [`crate::Device`]: [`crate::open`] says so, and [`compile_offline`] does
//! what can be done without a GPU — emits a lowered function as one HIP translation unit,
//! compiles it with hipcc for the target's architecture, and returns each kernel's
//! resources (VGPRs, SGPRs, spills, LDS, occupancy). `weft compile` prints them.

use std::time::{Duration, Instant};

use weft_codegen_cuda::hip::{HipOptions, emit_lowered};
use weft_codegen_cuda::hipcc::{self, HipccError, KernelResources};
use weft_ir::kernel::LoweredFunc;

use crate::device::DeviceError;
use crate::target::{Target, TargetInfo};

/// Why `rocm` cannot be opened as a device.
pub const NO_RUNTIME: &str = "weft has no ROCm runtime: AMD kernels are compiled offline \
     (`weft compile --target rocm` reports registers, spills, LDS and occupancy)";

/// A lowered function compiled for an AMD GPU.
#[derive(Clone, Debug)]
pub struct OfflineReport {
    /// The architecture compiled for (`gfx90a`).
    pub arch: String,
    /// The compiler (`hipcc, HIP 5.2.21153-0`).
    pub compiler: String,
    /// Per kernel of the function, in launch order: its name in the IR and its report.
    pub kernels: Vec<(String, KernelResources)>,
    /// Size of the code object.
    pub code_object_bytes: usize,
    /// Wall time of the compile.
    pub compile_time: Duration,
    /// The HIP source compiled.
    pub source: String,
}

/// The architecture `target` compiles for (`-arch`, else gfx90a); `None` for a target
/// that is not `rocm`.
pub fn arch(target: &Target) -> Option<&str> {
    match target {
        Target::Rocm { arch } => Some(arch.as_deref().unwrap_or(hipcc::DEFAULT_ARCH)),
        _ => None,
    }
}

/// Emits `func` as HIP and compiles it with hipcc for `target`'s architecture.
///
/// Errors: a target other than `rocm`, or hipcc absent, is [`DeviceError::Unavailable`];
/// a kernel the HIP emitter refuses (matrix fragments, limits) is [`DeviceError::Emit`];
/// a compile failure is [`DeviceError::Hipcc`].
pub fn compile_offline(target: &Target, func: &LoweredFunc) -> Result<OfflineReport, DeviceError> {
    let Some(arch) = arch(target) else {
        return Err(DeviceError::Unavailable {
            target: target.to_string(),
            reason: "only `rocm` targets compile offline with a resource report".into(),
        });
    };
    let tool = hipcc::probe().map_err(|e| DeviceError::Unavailable {
        target: target.to_string(),
        reason: e.to_string(),
    })?;
    let opts = HipOptions {
        limits: target.limits(),
    };
    let emitted = emit_lowered(func, &opts).map_err(|e| DeviceError::Emit {
        kernel: func.name.clone(),
        target: target.to_string(),
        source: Box::new(e),
    })?;
    let start = Instant::now();
    let co = hipcc::compile(&emitted.source, arch)?;
    let compile_time = start.elapsed();
    let kernels = emitted
        .kernels
        .iter()
        .map(|entry| {
            let symbol = &entry.name;
            co.kernel(symbol)
                .map(|r| (entry.kernel.clone(), r.clone()))
                .ok_or_else(|| HipccError::Report {
                    arch: arch.to_string(),
                    what: format!("no resource report for kernel `{symbol}`"),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(OfflineReport {
        arch: arch.to_string(),
        compiler: format!("hipcc, {}", tool.version),
        kernels,
        code_object_bytes: co.bytes.len(),
        compile_time,
        source: emitted.source,
    })
}

/// The `rocm` entry of [`crate::available_targets`]: compile-only when hipcc is here.
pub(crate) fn probe_targets() -> Vec<TargetInfo> {
    let target = Target::Rocm { arch: None };
    match hipcc::probe() {
        Ok(tool) => vec![TargetInfo {
            target,
            device: Some(format!("offline: hipcc, {}", tool.version)),
            unavailable: Some(NO_RUNTIME.to_string()),
        }],
        Err(e) => vec![TargetInfo {
            target,
            device: None,
            unavailable: Some(e.to_string()),
        }],
    }
}
