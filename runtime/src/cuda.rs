//! The `cuda` device: CUDA C from `weft_codegen_cuda`, compiled by NVRTC to PTX, loaded
//! and launched through cudarc's driver API, timed with CUDA events.
//!
//! cudarc loads libcuda and libnvrtc on first use and *panics* when they are absent, which
//! on a machine without a GPU is the normal case. Every entry point here therefore probes
//! for the library first (with cudarc's own list of names, through `libloading`) and
//! returns [`CudaError::LibraryMissing`]; calls into cudarc are additionally run under
//! `catch_unwind`, so a missing symbol in an old driver is an error too, never a crash.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use cudarc::driver::sys::{CUdevice_attribute, CUresult};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use rayon::prelude::*;
use thiserror::Error;
use weft_codegen_common::TargetLimits;
use weft_codegen_cuda::nvrtc::{self, NvrtcError, NvrtcUnavailable};
use weft_ir::data::{Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::kernel::Kernel;

use crate::device::{
    BufferId, Device, DeviceError, KernelArg, KernelId, Launch, Slab, Timing, check_launch,
    check_upload, element_bytes, storage_dtype,
};
use crate::stream_timing::time_runs;
use crate::target::{Target, TargetInfo};

const DRIVER_HINT: &str = "libcuda comes with the NVIDIA driver: this machine has no NVIDIA \
                           GPU driver, or it is not on the loader path (LD_LIBRARY_PATH)";

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

/// Runs `f`, turning a panic inside cudarc into [`CudaError::Panicked`].
pub(crate) fn guard<T>(op: &str, f: impl FnOnce() -> T) -> Result<T, CudaError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| CudaError::Panicked {
        op: op.to_string(),
        message: payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "(no message)".to_string()),
    })
}

/// Runs a driver call under [`guard`], naming the operation in its error.
pub(crate) fn driver<T>(
    op: impl Into<String>,
    f: impl FnOnce() -> Result<T, DriverError>,
) -> Result<T, CudaError> {
    let op = op.into();
    guard(&op, f)?.map_err(|source| CudaError::Driver { op, source })
}

/// The file names cudarc tries for `lib`, without repeats.
pub(crate) fn candidates(lib: &str) -> Vec<String> {
    let mut names = cudarc::get_lib_name_candidates(lib);
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// `NVIDIA 580.159.04, CUDA 13.0`: the kernel module's version (Linux's
/// `/proc/driver/nvidia/version`, where it exists) and the CUDA version of libcuda.
pub fn driver_version() -> String {
    let module = std::fs::read_to_string("/proc/driver/nvidia/version")
        .ok()
        .and_then(|text| {
            // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release
            // Build ...": the first word that is a dotted version number.
            let line = text.lines().next()?.to_string();
            line.split_whitespace()
                .find(|w| {
                    w.contains('.')
                        && w.split('.')
                            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                })
                .map(str::to_string)
        });
    let mut version: std::ffi::c_int = 0;
    // SAFETY: writes one int; libcuda was probed before any device was opened.
    let cuda = guard("cuDriverGetVersion", || unsafe {
        cudarc::driver::sys::cuDriverGetVersion(&mut version)
    })
    .ok()
    .filter(|r| *r == CUresult::CUDA_SUCCESS)
    .map(|_| format!("CUDA {}.{}", version / 1000, version % 1000 / 10));
    match (module, cuda) {
        (Some(m), Some(c)) => format!("NVIDIA {m}, {c}"),
        (Some(m), None) => format!("NVIDIA {m}"),
        (None, Some(c)) => c,
        (None, None) => "unknown".to_string(),
    }
}

/// Checks that libcuda (the driver API) can be loaded.
pub fn probe_driver() -> Result<(), CudaError> {
    // SAFETY: only tries to open the library with `libloading` under cudarc's names.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(CudaError::LibraryMissing {
            lib: "libcuda",
            tried: candidates("cuda"),
            hint: DRIVER_HINT,
        })
    }
}

/// Checks that libnvrtc (the runtime compiler) can be loaded. NVRTC needs no GPU. The
/// search is `weft_codegen_cuda::nvrtc::probe`'s: the loader's path, then the folders of
/// `LD_LIBRARY_PATH` as it is now and `WEFT_NVRTC_DIR`.
pub fn probe_nvrtc() -> Result<(), CudaError> {
    guard("probing for libnvrtc", nvrtc::probe)??;
    Ok(())
}

/// Compiles CUDA C to PTX for `arch` (`"sm_90"`) with NVRTC; `kernel` names the source in
/// errors. Works without a GPU.
pub fn compile_ptx(source: &str, arch: &str, kernel: &str) -> Result<String, CudaError> {
    nvrtc_call(kernel, arch, || nvrtc::compile_ptx(source, arch))
}

/// The code a device loads for `source`: a CUBIN for a real architecture (`sm_XX`), built
/// by NVRTC's own ptxas so that loading it costs no JIT compilation; PTX otherwise.
fn compile_code(source: &str, arch: &str, kernel: &str) -> Result<Ptx, CudaError> {
    if arch.starts_with("sm_") {
        nvrtc_call(kernel, arch, || nvrtc::compile_cubin(source, arch)).map(Ptx::from_binary)
    } else {
        compile_ptx(source, arch, kernel).map(Ptx::from_src)
    }
}

fn nvrtc_call<T>(
    kernel: &str,
    arch: &str,
    f: impl FnOnce() -> Result<T, NvrtcError>,
) -> Result<T, CudaError> {
    probe_nvrtc()?;
    let op = format!("NVRTC compile of kernel `{kernel}`");
    guard(&op, f)?.map_err(|e| match e {
        NvrtcError::Unavailable(u) => CudaError::NvrtcMissing(u),
        NvrtcError::Compile { log, .. } => CudaError::Compile {
            kernel: kernel.to_string(),
            arch: arch.to_string(),
            log,
        },
        other => CudaError::Compile {
            kernel: kernel.to_string(),
            arch: arch.to_string(),
            log: other.to_string(),
        },
    })
}

/// The `cuda` entries of [`crate::available_targets`]: one per device, or one saying why
/// there is none.
pub(crate) fn probe_targets() -> Vec<TargetInfo> {
    let unavailable = |reason: String| {
        vec![TargetInfo {
            target: Target::Cuda {
                arch: None,
                device: 0,
            },
            device: None,
            unavailable: Some(reason),
        }]
    };
    if let Err(e) = probe_driver() {
        return unavailable(e.to_string());
    }
    let count = match driver("cuDeviceGetCount", CudaContext::device_count) {
        Ok(n) => n.max(0) as usize,
        Err(e) => return unavailable(e.to_string()),
    };
    if count == 0 {
        return unavailable("the CUDA driver reports no device".to_string());
    }
    let nvrtc = probe_nvrtc().err().map(|e| e.to_string());
    (0..count)
        .map(|ordinal| {
            let target = Target::Cuda {
                arch: None,
                device: ordinal,
            };
            match describe(ordinal) {
                Ok((name, _)) => TargetInfo {
                    target,
                    device: Some(name),
                    unavailable: nvrtc.clone(),
                },
                Err(e) => TargetInfo {
                    target,
                    device: None,
                    unavailable: Some(e.to_string()),
                },
            }
        })
        .collect()
}

/// The name (with its `sm_XX`) and context of device `ordinal`.
fn describe(ordinal: usize) -> Result<(String, Arc<CudaContext>), CudaError> {
    let ctx = driver(format!("opening device {ordinal}"), || {
        CudaContext::new(ordinal)
    })?;
    Ok((name_of(&ctx)?, ctx))
}

/// A device's name with its `sm_XX`.
fn name_of(ctx: &CudaContext) -> Result<String, CudaError> {
    let name = driver("cuDeviceGetName", || ctx.name())?;
    let (major, minor) = driver("compute capability", || ctx.compute_capability())?;
    Ok(format!("{name} (sm_{major}{minor})"))
}

/// The context of device `ordinal`, or [`CudaError::NoDevice`] when the driver has fewer
/// devices (shared by the device and the vendor references).
pub(crate) fn open_context(ordinal: usize) -> Result<Arc<CudaContext>, CudaError> {
    let count = driver("cuDeviceGetCount", CudaContext::device_count)?.max(0) as usize;
    if ordinal >= count {
        return Err(CudaError::NoDevice { ordinal, count });
    }
    driver(format!("opening device {ordinal}"), || {
        CudaContext::new(ordinal)
    })
}

/// A compiled kernel: its function and the lowered kernel it came from (launch shape and
/// parameter types).
struct CompiledKernel {
    kernel: Kernel,
    function: usize,
}

/// A device buffer: bytes, with the dtype and length they hold.
struct CudaBuffer {
    mem: CudaSlice<u8>,
    dtype: DType,
    len: usize,
}

/// An NVIDIA GPU through the CUDA driver API.
pub struct CudaDevice {
    target: Target,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    arch: String,
    name: String,
    limits: TargetLimits,
    buffers: Slab<CudaBuffer>,
    functions: Vec<CudaFunction>,
    sources: Vec<String>,
    /// Source → index in `functions`/`sources`.
    by_source: HashMap<String, usize>,
    kernels: Vec<CompiledKernel>,
    /// (function, grid, block) → index in `kernels`.
    by_launch: HashMap<(usize, [u32; 3], [u32; 3]), usize>,
    /// The last kernel launched, to name it when a later sync reports its fault.
    last_launch: Option<String>,
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaDevice({}, {})", self.target, self.name)
    }
}

impl CudaDevice {
    /// Opens the device a `cuda` target names, after checking that libcuda and libnvrtc
    /// load. The architecture is the target's `-arch`, else the device's own.
    pub fn open(target: &Target) -> Result<CudaDevice, DeviceError> {
        let Target::Cuda { arch, device } = target else {
            return Err(DeviceError::Unavailable {
                target: target.to_string(),
                reason: "not a cuda target".to_string(),
            });
        };
        probe_driver()?;
        probe_nvrtc()?;
        let ctx = open_context(*device)?;
        let name = name_of(&ctx)?;
        let (major, minor) = driver("compute capability", || ctx.compute_capability())?;
        let arch = arch.clone().unwrap_or(format!("sm_{major}{minor}"));
        let limits = device_limits(&ctx)?;
        // One stream of our own for everything (copies, launches, timing): unlike the
        // legacy default stream it can be captured into a CUDA graph, which is how
        // `time_launches` times kernels without the host's launch cost. cudarc's per-buffer
        // event tracking only synchronizes several streams; with one, it would add driver
        // calls to every launch (and nodes to a captured graph).
        // SAFETY: every buffer is allocated, used and freed on this one stream, so no use
        // can race with an allocation or a free on another stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = driver("creating a stream", || ctx.new_stream())?;
        Ok(CudaDevice {
            target: target.clone(),
            ctx,
            stream,
            arch,
            name,
            limits,
            buffers: Slab::default(),
            functions: Vec::new(),
            sources: Vec::new(),
            by_source: HashMap::new(),
            kernels: Vec::new(),
            by_launch: HashMap::new(),
            last_launch: None,
        })
    }

    /// The `sm_XX` kernels are compiled for.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Compiles CUDA C `source` (hand-written, or emitted elsewhere) as the code of
    /// `kernel`: an `extern "C" __global__` function named like the kernel
    /// (`weft_codegen_cuda::entry_point`), taking its
    /// parameters in order. [`Device::compile`] emits the source and calls this.
    pub fn compile_cuda(
        &mut self,
        kernel: &Kernel,
        source: String,
    ) -> Result<KernelId, DeviceError> {
        weft_codegen_common::check_limits(kernel, &self.limits)?;
        let function = self.function_for(source, kernel)?;
        Ok(self.register(kernel, function))
    }

    fn compiled(&self, id: KernelId) -> Result<&CompiledKernel, DeviceError> {
        self.kernels.get(id.0).ok_or(DeviceError::BadHandle {
            what: "kernel",
            index: id.0,
        })
    }

    /// Loads PTX for `source`, or finds it in the cache.
    fn function_for(&mut self, source: String, kernel: &Kernel) -> Result<usize, DeviceError> {
        if let Some(&i) = self.by_source.get(&source) {
            return Ok(i);
        }
        let code = compile_code(&source, &self.arch, &kernel.name)?;
        self.load_ptx(source, code, kernel)
    }

    /// Loads compiled `code` (of `source`) as a module and finds the kernel's function.
    fn load_ptx(
        &mut self,
        source: String,
        code: Ptx,
        kernel: &Kernel,
    ) -> Result<usize, DeviceError> {
        let ctx = self.ctx.clone();
        let module = driver(
            format!("loading the module of kernel `{}`", kernel.name),
            || ctx.load_module(code),
        )?;
        let entry = weft_codegen_cuda::entry_point(kernel);
        let function = driver(format!("finding function `{entry}`"), || {
            module.load_function(&entry)
        })?;
        // Past 48 KiB of shared memory the function must opt in to its dynamic size.
        let dynamic = weft_codegen_cuda::dynamic_shared_bytes(kernel);
        if dynamic > 0 {
            use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYNAMIC;
            driver(
                format!("allowing `{entry}` {dynamic} bytes of dynamic shared memory"),
                || function.set_attribute(MAX_DYNAMIC, dynamic as i32),
            )?;
        }
        self.functions.push(function);
        self.sources.push(source.clone());
        self.by_source.insert(source, self.functions.len() - 1);
        Ok(self.functions.len() - 1)
    }

    /// The kernel handle of `kernel` compiled to `function`.
    fn register(&mut self, kernel: &Kernel, function: usize) -> KernelId {
        let key = (function, kernel.grid, kernel.block);
        if let Some(&i) = self.by_launch.get(&key) {
            return KernelId(i);
        }
        self.kernels.push(CompiledKernel {
            kernel: kernel.clone(),
            function,
        });
        self.by_launch.insert(key, self.kernels.len() - 1);
        KernelId(self.kernels.len() - 1)
    }

    /// Checks `kernel` against the device's limits and emits its CUDA C.
    fn emit_checked(
        kernel: &Kernel,
        limits: &TargetLimits,
        target: &str,
    ) -> Result<String, DeviceError> {
        weft_codegen_common::check_limits(kernel, limits)?;
        let opts = weft_codegen_cuda::CudaOptions {
            limits: limits.clone(),
        };
        weft_codegen_cuda::emit(kernel, &opts).map_err(|source| DeviceError::Emit {
            kernel: kernel.name.clone(),
            target: target.to_string(),
            source: Box::new(source),
        })
    }

    /// Enqueues one launch (no synchronisation).
    fn enqueue(&mut self, kernel: KernelId, args: &[KernelArg]) -> Result<(), DeviceError> {
        let ck = self.compiled(kernel)?;
        check_launch(&ck.kernel, args, |b| {
            let buf = self.buffers.get(b.0, "buffer")?;
            Ok((buf.dtype, buf.len))
        })?;
        // Scalars are passed by address: keep their values alive until the launch.
        let scalars: Vec<ScalarArg> = args
            .iter()
            .map(|a| match a {
                KernelArg::Scalar(s) => ScalarArg::from(*s),
                KernelArg::Buffer(_) => ScalarArg::None,
            })
            .collect();
        let function = self
            .functions
            .get(ck.function)
            .ok_or(DeviceError::BadHandle {
                what: "function",
                index: ck.function,
            })?;
        let mut builder = self.stream.launch_builder(function);
        for (arg, scalar) in args.iter().zip(&scalars) {
            match (arg, scalar) {
                (KernelArg::Buffer(b), _) => {
                    builder.arg(&self.buffers.get(b.0, "buffer")?.mem);
                }
                (KernelArg::Scalar(_), ScalarArg::F32(v)) => {
                    builder.arg(v);
                }
                (KernelArg::Scalar(_), ScalarArg::I32(v)) => {
                    builder.arg(v);
                }
                (KernelArg::Scalar(_), ScalarArg::U32(v)) => {
                    builder.arg(v);
                }
                (KernelArg::Scalar(_), ScalarArg::F16Bits(v)) => {
                    builder.arg(v);
                }
                (KernelArg::Scalar(_), ScalarArg::None) => {}
            }
        }
        let (grid, block) = (ck.kernel.grid, ck.kernel.block);
        let cfg = LaunchConfig {
            grid_dim: (grid[0], grid[1], grid[2]),
            block_dim: (block[0], block[1], block[2]),
            // Static in the emitted source up to 48 KiB; dynamic past it.
            shared_mem_bytes: weft_codegen_cuda::dynamic_shared_bytes(&ck.kernel),
        };
        let name = ck.kernel.name.clone();
        // SAFETY: the arguments match the kernel's parameters in number, kind, dtype and
        // size (`check_launch`), which is the contract the emitted source was written to.
        driver(
            format!("launching kernel `{name}` (grid {grid:?}, block {block:?})"),
            || unsafe { builder.launch(cfg) },
        )?;
        self.last_launch = Some(name);
        Ok(())
    }

    fn sync(&mut self, what: &str) -> Result<(), DeviceError> {
        let after = match &self.last_launch {
            Some(k) => format!("{what} (after kernel `{k}`)"),
            None => what.to_string(),
        };
        driver(after.clone(), || self.stream.synchronize())?;
        driver(after, || self.ctx.check_err())?;
        Ok(())
    }
}

/// A scalar kernel argument as the value cudarc passes by address. f16 goes as its bits:
/// `__half` is a 2-byte struct, passed by value exactly like a `u16`.
enum ScalarArg {
    None,
    F32(f32),
    I32(i32),
    U32(u32),
    F16Bits(u16),
}

impl From<Scalar> for ScalarArg {
    fn from(s: Scalar) -> ScalarArg {
        match s {
            Scalar::F32(v) => ScalarArg::F32(v),
            Scalar::I32(v) => ScalarArg::I32(v),
            Scalar::U32(v) => ScalarArg::U32(v),
            Scalar::F16(v) => ScalarArg::F16Bits(v.to_bits()),
        }
    }
}

/// The device's real limits (shared memory a block may opt in to, block and grid sizes).
fn device_limits(ctx: &Arc<CudaContext>) -> Result<TargetLimits, CudaError> {
    let attr = |a: CUdevice_attribute| -> Result<u64, CudaError> {
        Ok(driver(format!("cuDeviceGetAttribute({a:?})"), || ctx.attribute(a))?.max(0) as u64)
    };
    use CUdevice_attribute::*;
    Ok(TargetLimits {
        name: "cuda".to_string(),
        // What a block may opt in to (227 KiB on an H100): the emitter makes shared
        // memory past 48 KiB dynamic and the runtime opts the function in.
        max_shared_bytes: attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        max_threads_per_block: attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block_dim: [
            attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dim: [
            attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        f16: true,
        // Tensor cores through mma.sync: every architecture weft compiles for (sm_80+).
        matrix_units: TargetLimits::cuda().matrix_units,
    })
}

impl Device for CudaDevice {
    fn target(&self) -> &Target {
        &self.target
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn driver(&self) -> Option<String> {
        Some(driver_version())
    }

    fn limits(&self) -> TargetLimits {
        self.limits.clone()
    }

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufferId, DeviceError> {
        // A zero-byte allocation is an error in the driver; keep one byte.
        let bytes = len
            .checked_mul(element_bytes(dtype))
            .ok_or_else(|| CudaError::Driver {
                op: format!("allocating {len} x {dtype}"),
                source: DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY),
            })?
            .max(1);
        let stream = self.stream.clone();
        let mem = driver(format!("allocating {bytes} bytes"), || {
            stream.alloc_zeros::<u8>(bytes)
        })?;
        Ok(BufferId(self.buffers.insert(CudaBuffer {
            mem,
            dtype,
            len,
        })))
    }

    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        let b = self.buffers.remove(buf.0, "buffer")?;
        guard("freeing a buffer", || drop(b))?;
        Ok(())
    }

    fn upload(&mut self, buf: BufferId, data: &TensorData) -> Result<(), DeviceError> {
        let stream = self.stream.clone();
        let b = self.buffers.get_mut(buf.0, "buffer")?;
        check_upload(buf, b.dtype, b.len, data)?;
        let bytes = data.to_bytes();
        // `memcpy_htod` asserts that the source fits; `check_upload` made sure it does.
        if bytes.is_empty() {
            return Ok(());
        }
        let mut view = b.mem.slice_mut(0..bytes.len());
        driver(format!("uploading {} bytes", bytes.len()), || {
            stream.memcpy_htod(&bytes, &mut view)
        })?;
        Ok(())
    }

    fn download(&mut self, buf: BufferId) -> Result<TensorData, DeviceError> {
        let stream = self.stream.clone();
        let b = self.buffers.get(buf.0, "buffer")?;
        let n = b.len * element_bytes(b.dtype);
        let dtype = storage_dtype(b.dtype);
        if n == 0 {
            return Ok(TensorData::from_bytes(dtype, &[]));
        }
        let view = b.mem.slice(0..n);
        let bytes = driver(format!("downloading {n} bytes"), || {
            stream.clone_dtoh(&view)
        })?;
        self.sync("download")?;
        Ok(TensorData::from_bytes(dtype, &bytes))
    }

    fn compile(&mut self, kernel: &Kernel) -> Result<KernelId, DeviceError> {
        let source = Self::emit_checked(kernel, &self.limits, &self.target.to_string())?;
        self.compile_cuda(kernel, source)
    }

    fn compile_many(&mut self, kernels: &[&Kernel]) -> Vec<Result<KernelId, DeviceError>> {
        // Emitting and NVRTC (ptxas included, for a CUBIN) are pure and thread-safe: both
        // run on every core. Loading modules into the context is done here, in order.
        let (limits, target, arch) = (&self.limits, self.target.to_string(), &self.arch);
        let sources: Vec<Result<String, DeviceError>> = kernels
            .par_iter()
            .map(|k| Self::emit_checked(k, limits, &target))
            .collect();
        let mut todo: Vec<(&String, &Kernel)> = Vec::new();
        for (s, k) in sources.iter().zip(kernels) {
            if let Ok(s) = s
                && !self.by_source.contains_key(s)
                && !todo.iter().any(|(t, _)| *t == s)
            {
                todo.push((s, k));
            }
        }
        let mut compiled: HashMap<String, Result<Ptx, CudaError>> = todo
            .par_iter()
            .map(|(s, k)| ((*s).clone(), compile_code(s, arch, &k.name)))
            .collect();
        let mut out = Vec::with_capacity(kernels.len());
        for (source, kernel) in sources.into_iter().zip(kernels) {
            out.push(source.and_then(|source| {
                let function = match (self.by_source.get(&source), compiled.remove(&source)) {
                    (Some(&f), _) => f,
                    (None, Some(ptx)) => self.load_ptx(source, ptx?, kernel)?,
                    // A source shared with an earlier kernel whose compile failed: again,
                    // for its own error.
                    (None, None) => self.function_for(source, kernel)?,
                };
                Ok(self.register(kernel, function))
            }));
        }
        out
    }

    fn source(&self, kernel: KernelId) -> Option<&str> {
        let ck = self.kernels.get(kernel.0)?;
        self.sources.get(ck.function).map(String::as_str)
    }

    fn launch(&mut self, kernel: KernelId, args: &[KernelArg]) -> Result<(), DeviceError> {
        self.enqueue(kernel, args)
    }

    fn synchronize(&mut self) -> Result<(), DeviceError> {
        self.sync("synchronize")
    }

    fn time_launches(
        &mut self,
        launches: &[Launch],
        warmup: usize,
        iters: usize,
    ) -> Result<Timing, DeviceError> {
        // Groups of back-to-back runs between event pairs, replayed as CUDA graphs
        // (`stream_timing` says why): kernel time, without the host's launch cost.
        let (ctx, stream) = (self.ctx.clone(), self.stream.clone());
        let mut run = || -> Result<(), DeviceError> {
            for l in launches {
                self.enqueue(l.kernel, &l.args)?;
            }
            Ok(())
        };
        time_runs(&ctx, &stream, warmup, iters, &mut run)?.ok_or(DeviceError::NoIterations)
    }
}
