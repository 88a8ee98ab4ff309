//! weft-runtime: target strings, the [`Device`] trait, and the devices that run lowered
//! kernels — `cpu` (the interpreter), `cuda` (NVRTC + cudarc) and wgpu (`vulkan`, `metal`,
//! `dx12`, `gl`, `wgpu`, `webgpu`) — and `rocm`, which compiles offline ([`rocm`]).
//!
//! ```no_run
//! # fn demo(func: &weft_ir::kernel::LoweredFunc, a: ndarray::ArrayD<f32>, b: ndarray::ArrayD<f32>)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! let target = weft_runtime::Target::parse("vulkan")?;
//! let mut device = weft_runtime::open(&target)?;
//! let outputs = weft_runtime::array::run_f32(device.as_mut(), func, &[a, b])?;
//! # Ok(()) }
//! ```
//!
//! A machine without a GPU is a normal state: probing ([`available_targets`]) and opening
//! ([`open`]) report missing libraries, drivers and adapters as errors, never panics.

pub mod array;
pub mod cpu;
pub mod cuda;
pub mod device;
pub mod error;
mod open;
pub mod reference;
pub mod rocm;
pub mod shader_checks;
pub mod target;
pub mod timing;
pub mod wgpu_device;

pub use shader_checks::ShaderChecks;
pub use wgpu_device::WgpuOptions;

pub use device::bound::{Bound, Params};
pub use device::{BufferId, Device, KernelArg, KernelId, Launch};
pub use error::{ArgError, DeviceError};
pub use open::{available_targets, open, open_with};
pub use target::{SourceError, SourceLanguage, Target, TargetError, TargetInfo, WgpuBackend};
pub use timing::{Timing, WARM_UP};

/// The README's example runs as a doctest, so it stays true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
