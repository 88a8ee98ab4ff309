//! The runtime's errors: [`DeviceError`] (anything a device reports), with the argument
//! checks' [`ArgError`] and the backends' own [`CudaError`] and [`WgpuError`] as its
//! causes. They live together, below every device, so that the devices, opening and the
//! [`crate::Device`] trait all depend on this room and it on none of them.

use cudarc::driver::DriverError;
use thiserror::Error;
use weft_codegen_common::{EmitError, LimitError};
use weft_codegen_cuda::hipcc::HipccError;
use weft_codegen_cuda::nvrtc::NvrtcUnavailable;
use weft_ir::dtype::DType;
use weft_ir::interp::InterpError;

/// Arguments that do not match a function's parameters.
#[derive(Debug, Error, PartialEq)]
pub enum ArgError {
    #[error("`{func}` takes {expected} arguments, got {got}")]
    Count {
        func: String,
        expected: usize,
        got: usize,
    },
    #[error("`{func}`: parameter `{param}` is a {expected}, got a {got}")]
    Kind {
        func: String,
        param: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("`{func}`: parameter `{param}` has dtype {expected}, got {got}")]
    DType {
        func: String,
        param: String,
        expected: DType,
        got: DType,
    },
    #[error("`{func}`: parameter `{param}` has {expected} elements, got {got}")]
    Len {
        func: String,
        param: String,
        expected: usize,
        got: usize,
    },
    #[error(
        "`{func}`: kernel `{kernel}` uses buffer `{buffer}`, which is neither a parameter \
         nor a temporary of the function"
    )]
    UnknownBuffer {
        func: String,
        kernel: String,
        buffer: String,
    },
    #[error("`{func}`: kernel `{kernel}` uses scalar `{var}`, which is not a parameter")]
    UnknownScalar {
        func: String,
        kernel: String,
        var: String,
    },
    #[error("kernel `{kernel}` takes {expected} arguments, got {got}")]
    LaunchCount {
        kernel: String,
        expected: usize,
        got: usize,
    },
    #[error("kernel `{kernel}`: argument {index} (`{param}`) should be a {expected}")]
    LaunchKind {
        kernel: String,
        index: usize,
        param: String,
        expected: &'static str,
    },
    #[error(
        "kernel `{kernel}`: buffer argument `{param}` holds {got_len} x {got}, the kernel \
         declares {expected_len} x {expected}"
    )]
    LaunchBuffer {
        kernel: String,
        param: String,
        expected: DType,
        expected_len: usize,
        got: DType,
        got_len: usize,
    },
}

/// Anything that goes wrong on a device. Large causes are boxed so that results stay
/// small on the success path.
#[derive(Debug, Error)]
pub enum DeviceError {
    /// The target cannot run on this machine (no library, no driver, no adapter).
    #[error("target `{target}` is not available: {reason}")]
    Unavailable { target: String, reason: String },
    #[error(transparent)]
    Cuda(Box<CudaError>),
    #[error(transparent)]
    Wgpu(Box<WgpuError>),
    /// hipcc (the `rocm` target's offline compiler) failed.
    #[error(transparent)]
    Hipcc(Box<HipccError>),
    #[error("interpreter, kernel `{kernel}`: {source}")]
    Interp {
        kernel: String,
        #[source]
        source: Box<InterpError>,
    },
    #[error("emitting kernel `{kernel}` for {target}: {source}")]
    Emit {
        kernel: String,
        target: String,
        #[source]
        source: Box<EmitError>,
    },
    #[error(transparent)]
    Limits(Box<LimitError>),
    #[error(transparent)]
    Args(Box<ArgError>),
    #[error("{what} handle {index} is not live on this device (freed, or from another device)")]
    BadHandle { what: &'static str, index: usize },
    #[error("cannot time zero iterations")]
    NoIterations,
    /// The device (or, for the interpreter, this process) could not allocate a buffer.
    #[error(
        "could not allocate {bytes} bytes for a buffer of {len} {dtype} elements on {target}: out of memory"
    )]
    OutOfMemory {
        target: String,
        bytes: usize,
        len: usize,
        dtype: weft_ir::dtype::DType,
    },
}

impl From<CudaError> for DeviceError {
    fn from(e: CudaError) -> Self {
        DeviceError::Cuda(Box::new(e))
    }
}
impl From<WgpuError> for DeviceError {
    fn from(e: WgpuError) -> Self {
        DeviceError::Wgpu(Box::new(e))
    }
}
impl From<HipccError> for DeviceError {
    fn from(e: HipccError) -> Self {
        DeviceError::Hipcc(Box::new(e))
    }
}
impl From<LimitError> for DeviceError {
    fn from(e: LimitError) -> Self {
        DeviceError::Limits(Box::new(e))
    }
}
impl From<ArgError> for DeviceError {
    fn from(e: ArgError) -> Self {
        DeviceError::Args(Box::new(e))
    }
}

impl DeviceError {
    /// An emitter's refusal of `kernel` for `target`: a kernel over the target's limits is
    /// [`DeviceError::Limits`] (the limit names itself), anything else
    /// [`DeviceError::Emit`].
    pub fn emit(kernel: &weft_ir::kernel::Kernel, target: &str, e: EmitError) -> DeviceError {
        match e {
            EmitError::Limit(limit) => DeviceError::Limits(Box::new(limit)),
            other => DeviceError::Emit {
                kernel: kernel.name.clone(),
                target: target.to_string(),
                source: Box::new(other),
            },
        }
    }

    /// True when the error means the target is absent here (missing library, driver or
    /// adapter), as opposed to a failure of something that is present.
    pub fn is_unavailable(&self) -> bool {
        match self {
            DeviceError::Unavailable { .. } => true,
            DeviceError::Cuda(e) => e.is_unavailable(),
            DeviceError::Wgpu(e) => e.is_unavailable(),
            DeviceError::Hipcc(e) => matches!(**e, HipccError::Unavailable(_)),
            _ => false,
        }
    }
}

/// Something that went wrong in CUDA: a missing library, a driver call, NVRTC.
#[derive(Debug, Error)]
pub enum CudaError {
    #[error("{lib} not found (tried {}); {hint}", tried.join(", "))]
    LibraryMissing {
        lib: &'static str,
        tried: Vec<String>,
        hint: &'static str,
    },
    #[error(transparent)]
    NvrtcMissing(#[from] NvrtcUnavailable),
    #[error("no CUDA device {ordinal}: this machine has {count}")]
    NoDevice { ordinal: usize, count: usize },
    #[error("CUDA driver, {op}: {source}")]
    Driver {
        op: String,
        #[source]
        source: DriverError,
    },
    #[error("NVRTC could not compile kernel `{kernel}` for {arch}:\n{log}")]
    Compile {
        kernel: String,
        arch: String,
        log: String,
    },
    #[error("cudarc panicked during {op}: {message}")]
    Panicked { op: String, message: String },
    /// A launch the driver cannot be given: a TMA tensor map it refused to encode.
    #[error("launching kernel `{kernel}`: {why}")]
    Launch { kernel: String, why: String },
}

impl CudaError {
    /// True when CUDA is absent here (no library, no device), not broken.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            CudaError::LibraryMissing { .. }
                | CudaError::NvrtcMissing(_)
                | CudaError::NoDevice { .. }
        )
    }
}

/// Something that went wrong in wgpu.
#[derive(Debug, Error)]
pub enum WgpuError {
    #[error("no {backend} adapter{}; {hint}", list_found(found))]
    NoAdapter {
        backend: String,
        /// The adapters wgpu did find, as `name (backend, type)`.
        found: Vec<String>,
        hint: &'static str,
    },
    #[error("adapter index {index} for `{target}`, but only {count} adapters match")]
    NoSuchAdapter {
        target: String,
        index: usize,
        count: usize,
    },
    #[error("requesting a device from adapter `{adapter}`: {message}")]
    RequestDevice { adapter: String, message: String },
    #[error("wgpu, {op}: {message}")]
    Wgpu { op: String, message: String },
    #[error(
        "buffer of {bytes} bytes exceeds the adapter's limit of {limit} bytes per storage \
         binding"
    )]
    BufferTooLarge { bytes: u64, limit: u64 },
    #[error("kernel `{kernel}`: WGSL binding {binding} is parameter {param}, which is {what}")]
    Binding {
        kernel: String,
        binding: u32,
        param: usize,
        what: &'static str,
    },
    #[error("wgpu panicked during {op}: {message}")]
    Panicked { op: String, message: String },
}

fn list_found(found: &[String]) -> String {
    if found.is_empty() {
        " (wgpu found no adapter at all)".to_string()
    } else {
        format!(" (wgpu found: {})", found.join(", "))
    }
}

impl WgpuError {
    /// True when the target's backend is absent here (no adapter), not broken.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            WgpuError::NoAdapter { .. } | WgpuError::NoSuchAdapter { .. }
        )
    }
}
