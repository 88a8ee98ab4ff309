//! The `cuda` device: CUDA C from `weft_codegen_cuda`, compiled by NVRTC to PTX, loaded
//! and launched through cudarc's driver API, timed with CUDA events.
//!
//! cudarc loads libcuda and libnvrtc on first use and *panics* when they are absent, which
//! on a machine without a GPU is the normal case. Every entry point here therefore probes
//! for the library first (with cudarc's own list of names, through `libloading`) and
//! returns [`CudaError::LibraryMissing`]; calls into cudarc are additionally run under
//! `catch_unwind`, so a missing symbol in an old driver is an error too, never a crash.

mod beside;
mod driver;
mod pdl;
mod stream_timing;
mod tensor_map;

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::sys::{CUdevice_attribute, CUresult};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DriverError};
use cudarc::nvrtc::Ptx;
use rayon::prelude::*;
use weft_codegen_common::{Emitted, TargetLimits};
use weft_ir::data::{Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::kernel::Kernel;

use crate::device::{
    BufferId, Device, DeviceError, KernelArg, KernelId, Launch, Slab, Timing, check_launch,
    check_upload, element_bytes, storage_dtype,
};
use crate::target::{Target, TargetInfo};

pub(crate) use driver::{candidates, compile_code, driver, guard, open_context};
pub use driver::{compile_ptx, driver_version, probe_driver, probe_nvrtc};
pub(crate) use stream_timing::time_runs;

pub use crate::error::CudaError;

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

/// A loaded function and the dynamic shared memory its launches pass.
struct Loaded {
    function: CudaFunction,
    dynamic_shared_bytes: u32,
    /// The function starts by waiting for the kernel before it
    /// ([`weft_codegen_common::EntryPoint::waits_for_previous_grid`]), so it may be
    /// launched before that kernel has finished.
    waits_for_previous_grid: bool,
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
    functions: Vec<Loaded>,
    sources: Vec<String>,
    /// Source → index in `functions`/`sources`.
    by_source: HashMap<String, usize>,
    kernels: Vec<CompiledKernel>,
    /// (function, grid, block) → index in `kernels`.
    by_launch: HashMap<(usize, [u32; 3], [u32; 3]), usize>,
    /// The last kernel launched, to name it when a later sync reports its fault.
    last_launch: Option<String>,
    /// Launch the kernels that wait for their predecessor with programmatic dependent
    /// launch ([`pdl::enabled`]).
    pdl: bool,
    /// The launch lists [`Device::replay`] captured as CUDA graphs, by
    /// [`crate::device::launch_key`].
    /// A graph holds device pointers: freeing any buffer drops them all.
    replays: HashMap<u64, (Vec<Launch>, cudarc::driver::CudaGraph)>,
    /// The second stream the kernels that write nothing run on ([`beside`]).
    beside: beside::Beside,
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
        // An sm_90 device compiles for sm_90a (its own code, which runs there only) and
        // gets Hopper's warpgroup MMAs and TMA; `-arch=sm_90` opts out.
        let arch = arch.clone().unwrap_or(if (major, minor) == (9, 0) {
            "sm_90a".to_string()
        } else {
            format!("sm_{major}{minor}")
        });
        let mut limits = device_limits(&ctx)?;
        if arch == "sm_90a" {
            limits = limits.with_warpgroup_mma();
        }
        // One stream of our own for everything (copies, launches, timing): unlike the
        // legacy default stream it can be captured into a CUDA graph, which is how
        // `time_launches` times kernels without the host's launch cost. cudarc's per-buffer
        // event tracking only synchronizes several streams; with one, it would add driver
        // calls to every launch (and nodes to a captured graph).
        // SAFETY: every buffer is allocated, used and freed on this one stream, so no use
        // can race with an allocation or a free on another stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = driver("creating a stream", || ctx.new_stream())?;
        // The one exception to one stream: kernels that write no buffer, forked off it and
        // joined back (`beside`), reading only what no kernel of the run writes.
        let beside = driver("creating a second stream", || beside::Beside::open(&ctx))?;
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
            replays: HashMap::new(),
            last_launch: None,
            pdl: pdl::enabled(major),
            beside,
        })
    }

    /// The `sm_XX` kernels are compiled for.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// Compiles `emitted` as the code of `kernel`, whose launch shape and parameters it
    /// follows: CUDA C from `weft_codegen_cuda::emit`, or a source written elsewhere and
    /// wrapped by [`Emitted::handwritten`]. Both were checked against the target's limits
    /// when they were made; this compiles and loads. [`Device::compile`] emits and calls
    /// this.
    pub fn compile_cuda(
        &mut self,
        kernel: &Kernel,
        emitted: Emitted,
    ) -> Result<KernelId, DeviceError> {
        let function = self.function_for(emitted, &kernel.name)?;
        Ok(self.register(kernel, function))
    }

    fn compiled(&self, id: KernelId) -> Result<&CompiledKernel, DeviceError> {
        self.kernels.get(id.0).ok_or(DeviceError::BadHandle {
            what: "kernel",
            index: id.0,
        })
    }

    /// Loads the code of `emitted`, compiling it, or finds it in the cache.
    fn function_for(&mut self, emitted: Emitted, kernel: &str) -> Result<usize, DeviceError> {
        if let Some(&i) = self.by_source.get(&emitted.source) {
            return Ok(i);
        }
        let code = compile_code(&emitted.source, &self.arch, kernel)?;
        self.load_ptx(emitted, code, kernel)
    }

    /// Loads compiled `code` (of `emitted`) as a module and finds its entry point.
    fn load_ptx(
        &mut self,
        emitted: Emitted,
        code: Ptx,
        kernel: &str,
    ) -> Result<usize, DeviceError> {
        let ctx = self.ctx.clone();
        let module = driver(format!("loading the module of kernel `{kernel}`"), || {
            ctx.load_module(code)
        })?;
        let entry = emitted.entry();
        let function = driver(format!("finding function `{}`", entry.name), || {
            module.load_function(&entry.name)
        })?;
        // Past 48 KiB of shared memory the function must opt in to its dynamic size.
        let dynamic = entry.dynamic_shared_bytes;
        if dynamic > 0 {
            use cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYNAMIC;
            driver(
                format!(
                    "allowing `{}` {dynamic} bytes of dynamic shared memory",
                    entry.name
                ),
                || function.set_attribute(MAX_DYNAMIC, dynamic as i32),
            )?;
        }
        self.functions.push(Loaded {
            function,
            dynamic_shared_bytes: dynamic,
            waits_for_previous_grid: entry.waits_for_previous_grid,
        });
        self.sources.push(emitted.source.clone());
        self.by_source
            .insert(emitted.source, self.functions.len() - 1);
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

    /// `kernel`'s CUDA C, emitted for (and checked once against) the device's limits.
    fn emit(kernel: &Kernel, limits: &TargetLimits, target: &str) -> Result<Emitted, DeviceError> {
        let opts = weft_codegen_cuda::CudaOptions {
            limits: limits.clone(),
        };
        weft_codegen_cuda::emit(kernel, &opts).map_err(|e| DeviceError::emit(kernel, target, e))
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
        let loaded = self
            .functions
            .get(ck.function)
            .ok_or(DeviceError::BadHandle {
                what: "function",
                index: ck.function,
            })?;
        // TMA tensor maps, after the other arguments (Hopper kernels only).
        let mut maps = Vec::new();
        for map in ck.kernel.tensor_maps() {
            let at = ck.kernel.params.iter().position(|p| {
                matches!(p, weft_ir::kernel::KernelParam::Buffer { buffer, .. } if *buffer == map.buffer)
            });
            let Some(KernelArg::Buffer(b)) = at.and_then(|i| args.get(i)) else {
                return Err(CudaError::Launch {
                    kernel: ck.kernel.name.clone(),
                    why: format!(
                        "no buffer argument for the tensor map of `{}`",
                        map.buffer.name()
                    ),
                }
                .into());
            };
            let mem = &self.buffers.get(b.0, "buffer")?.mem;
            let (ptr, _sync) = mem.device_ptr(&self.stream);
            maps.push(tensor_map::encode(&ck.kernel, &map, ptr)?);
        }
        let (grid, block) = (ck.kernel.grid, ck.kernel.block);
        let name = ck.kernel.name.clone();
        // A kernel that writes nothing runs beside the chain, forked off the stream here
        // (after everything before it) and never programmatically.
        let beside = beside::Beside::takes(&ck.kernel);
        let what = || format!("launching kernel `{name}` (grid {grid:?}, block {block:?})");
        // The kernel's parameters by address, in order: buffers' device pointers, scalars,
        // then the tensor maps.
        let mut pointers = Vec::with_capacity(args.len());
        for arg in args {
            if let KernelArg::Buffer(b) = arg {
                let (ptr, _sync) = self
                    .buffers
                    .get(b.0, "buffer")?
                    .mem
                    .device_ptr(&self.stream);
                pointers.push(ptr);
            }
        }
        let mut params: Vec<*mut std::ffi::c_void> = Vec::with_capacity(args.len() + maps.len());
        let mut buffers = pointers.iter();
        for (arg, scalar) in args.iter().zip(&scalars) {
            let at = match (arg, scalar) {
                // One pointer per buffer argument, taken in the same order above.
                (KernelArg::Buffer(_), _) => buffers.next().map(pdl::address),
                (KernelArg::Scalar(_), s) => s.address(),
            };
            params.extend(at);
        }
        params.extend(maps.iter().map(pdl::address));
        let shape = pdl::Shape {
            grid,
            block,
            // Static in the emitted source up to 48 KiB; dynamic past it.
            shared_bytes: loaded.dynamic_shared_bytes,
        };
        let function = &loaded.function;
        // SAFETY: the arguments match the kernel's parameters in number, kind, dtype and
        // size (`check_launch`), which is the contract the emitted source was written to;
        // `params` points into `pointers`, `scalars` and `maps`, which outlive the call
        // (the driver copies the arguments before it returns). Only a kernel that waits
        // for its predecessor is launched with programmatic dependence.
        let stream = match beside {
            true => driver(what(), || self.beside.fork(&self.stream))?.clone(),
            false => self.stream.clone(),
        };
        let mut launch = |programmatic: bool| {
            driver(what(), || unsafe {
                pdl::launch(&stream, function, shape, &mut params, programmatic)
            })
        };
        let programmatic = self.pdl && loaded.waits_for_previous_grid && !beside;
        let mut refused = false;
        match launch(programmatic) {
            Ok(()) => {}
            // A driver (or a stream capture) that refuses the attribute: launch the
            // ordinary way, now and from here on; the kernels' waits then return at once.
            // A launch that is wrong for another reason fails there too, with the
            // driver's word for it.
            Err(CudaError::Driver { source, .. }) if programmatic && pdl::refused(&source) => {
                refused = true;
                launch(false)?;
            }
            Err(e) => return Err(e.into()),
        }
        if refused {
            self.pdl = false;
        }
        self.last_launch = Some(name);
        Ok(())
    }

    /// Makes the stream wait for the kernels forked beside it since the last join.
    fn join_beside(&mut self) -> Result<(), DeviceError> {
        let stream = self.stream.clone();
        Ok(driver("joining the second stream", || {
            self.beside.join(&stream)
        })?)
    }

    fn sync(&mut self, what: &str) -> Result<(), DeviceError> {
        let after = match &self.last_launch {
            Some(k) => format!("{what} (after kernel `{k}`)"),
            None => what.to_string(),
        };
        self.join_beside()?;
        driver(after.clone(), || self.stream.synchronize())?;
        driver(after, || self.ctx.check_err())?;
        Ok(())
    }
}

/// A scalar kernel argument as the launch passes it, by address. f16 goes as its bits:
/// `__half` is a 2-byte struct, passed by value exactly like a `u16`.
enum ScalarArg {
    None,
    F32(f32),
    I32(i32),
    U32(u32),
    F16Bits(u16),
}

impl ScalarArg {
    /// The value's address, as a kernel parameter list holds it; `None` for a buffer.
    fn address(&self) -> Option<*mut std::ffi::c_void> {
        match self {
            ScalarArg::None => None,
            ScalarArg::F32(v) => Some(pdl::address(v)),
            ScalarArg::I32(v) => Some(pdl::address(v)),
            ScalarArg::U32(v) => Some(pdl::address(v)),
            ScalarArg::F16Bits(v) => Some(pdl::address(v)),
        }
    }
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
        multiprocessors: attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        // Tensor cores through mma.sync, registers and their cap: every architecture
        // weft compiles for (sm_80+) has them as `TargetLimits::cuda` says.
        ..TargetLimits::cuda()
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

    fn memory_available(&self) -> Option<u64> {
        // `cuMemGetInfo`'s free bytes, in this device's context.
        self.ctx.mem_get_info().ok().map(|(free, _)| free as u64)
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
        // A captured graph may point at this buffer, and a later one may take its handle.
        self.replays.clear();
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
        let emitted = Self::emit(kernel, &self.limits, &self.target.to_string())?;
        self.compile_cuda(kernel, emitted)
    }

    fn compile_many(&mut self, kernels: &[&Kernel]) -> Vec<Result<KernelId, DeviceError>> {
        // Emitting and NVRTC (ptxas included, for a CUBIN) are pure and thread-safe: both
        // run on every core. Loading modules into the context is done here, in order.
        let (limits, target, arch) = (&self.limits, self.target.to_string(), &self.arch);
        let sources: Vec<Result<Emitted, DeviceError>> = kernels
            .par_iter()
            .map(|k| Self::emit(k, limits, &target))
            .collect();
        let mut todo: Vec<(&String, &Kernel)> = Vec::new();
        for (e, k) in sources.iter().zip(kernels) {
            if let Ok(e) = e
                && !self.by_source.contains_key(&e.source)
                && !todo.iter().any(|(t, _)| **t == e.source)
            {
                todo.push((&e.source, k));
            }
        }
        let mut compiled: HashMap<String, Result<Ptx, CudaError>> = todo
            .par_iter()
            .map(|(s, k)| ((*s).clone(), compile_code(s, arch, &k.name)))
            .collect();
        let mut out = Vec::with_capacity(kernels.len());
        for (emitted, kernel) in sources.into_iter().zip(kernels) {
            out.push(emitted.and_then(|emitted| {
                let cached = self.by_source.get(&emitted.source).copied();
                let function = match (cached, compiled.remove(&emitted.source)) {
                    (Some(f), _) => f,
                    (None, Some(ptx)) => self.load_ptx(emitted, ptx?, &kernel.name)?,
                    // A source shared with an earlier kernel whose compile failed: again,
                    // for its own error.
                    (None, None) => self.function_for(emitted, &kernel.name)?,
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

    fn replay(&mut self, launches: &[Launch]) -> Result<(), DeviceError> {
        // Captured once as a CUDA graph (whose capture runs it), then relaunched whole:
        // one driver call per step instead of one per kernel.
        let key = crate::device::launch_key(launches);
        // The list itself is compared too: a hash collision must not run another graph.
        if let Some((_, g)) = self.replays.get(&key).filter(|(l, _)| l == launches) {
            return Ok(driver::driver("launching a CUDA graph", || g.launch())?);
        }
        let stream = self.stream.clone();
        let mut run = || -> Result<(), DeviceError> {
            for l in launches {
                self.enqueue(l.kernel, &l.args)?;
            }
            self.join_beside()
        };
        if let Some(g) = stream_timing::capture(&stream, 1, &mut run) {
            self.replays.insert(key, (launches.to_vec(), g));
            return Ok(());
        }
        // The driver refused the capture: the launches one by one.
        for l in launches {
            self.enqueue(l.kernel, &l.args)?;
        }
        self.join_beside()
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
            self.join_beside()
        };
        time_runs(&ctx, &stream, warmup, iters, &mut run)?.ok_or(DeviceError::NoIterations)
    }
}
