//! Opening devices: [`open`] a target string's device, and [`available_targets`], what
//! this machine can run. The one room that knows every concrete device; the
//! [`Device`] trait's room knows none of them.

use crate::device::Device;
use crate::error::DeviceError;
use crate::target::{Target, TargetInfo};
use crate::wgpu_device::WgpuOptions;

/// Opens a device for `target`, with default options.
pub fn open(target: &Target) -> Result<Box<dyn Device>, DeviceError> {
    open_with(target, WgpuOptions::default())
}

/// Opens a device for `target`; `wgpu` applies to the wgpu targets (e.g. unchecked
/// shaders for benchmarks).
pub fn open_with(target: &Target, wgpu: WgpuOptions) -> Result<Box<dyn Device>, DeviceError> {
    Ok(match target {
        Target::Cpu => Box::new(crate::cpu::CpuDevice::new()),
        Target::Cuda { .. } => Box::new(crate::cuda::CudaDevice::open(target)?),
        Target::Wgpu { .. } => Box::new(crate::wgpu_device::WgpuDevice::open(target, wgpu)?),
        Target::Rocm { .. } => {
            return Err(DeviceError::Unavailable {
                target: target.to_string(),
                reason: crate::rocm::NO_RUNTIME.to_string(),
            });
        }
    })
}

/// Every target with what this machine has for it: one entry per target name (and one
/// per further CUDA device or wgpu adapter, as `-device=N`).
///
/// Probing never panics and never fails: a missing libcuda, libnvrtc or Vulkan driver is
/// reported in [`TargetInfo::unavailable`].
pub fn available_targets() -> Vec<TargetInfo> {
    let mut out = vec![TargetInfo {
        target: Target::Cpu,
        device: Some("weft interpreter".to_string()),
        unavailable: None,
    }];
    out.extend(crate::cuda::probe_targets());
    out.extend(crate::rocm::probe_targets());
    out.extend(crate::wgpu_device::probe_targets());
    out
}
