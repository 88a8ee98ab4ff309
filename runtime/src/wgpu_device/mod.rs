//! The wgpu device (`vulkan`, `metal`, `dx12`, `gl`, `wgpu`, `webgpu`): WGSL from
//! `weft_codegen_wgsl`, run through wgpu on the adapter the target chooses.
//!
//! The device asks for its adapter's real limits (WebGPU's defaults would hold every
//! kernel to 16 KiB of workgroup memory and 256 invocations), except for `webgpu`, whose
//! point is to stay within the defaults. Errors wgpu reports asynchronously are caught in
//! error scopes, or by an uncaptured-error handler that records them instead of wgpu's
//! default, which panics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, mpsc};

use rayon::prelude::*;
use weft_codegen_common::{Emitted, MatrixUnit, TargetLimits};
use weft_ir::data::TensorData;
use weft_ir::dtype::DType;
use weft_ir::kernel::Kernel;

use crate::device::{
    BufferId, Device, DeviceError, KernelArg, KernelId, Launch, Slab, Timing, check_upload,
    element_bytes, storage_dtype,
};
pub use crate::error::WgpuError;
use crate::shader_checks::ShaderChecks;
use crate::target::{Target, WgpuBackend};
use crate::timing::{rising, settle, warm_up};

mod adapter;
mod barriers;
mod pipeline;

pub(crate) use adapter::probe_targets;
use adapter::{adapters, candidates, describe, no_adapter_hint};

/// Storage buffers are allocated in multiples of this many bytes, at least one: emitters
/// may declare a buffer `array<vec4<T>>`, whose binding must hold whole vectors, and
/// zero-sized bindings are invalid.
const BUFFER_ALIGN: u64 = 16;

/// Timestamp queries per query set (wgpu's maximum).
const MAX_QUERIES: u32 = wgpu::QUERY_SET_MAX_QUERIES;

/// Options of a wgpu device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WgpuOptions {
    /// Which kernels are created without naga's runtime checks
    /// (`ShaderRuntimeChecks::unchecked()`): by default those the bounds prover proves
    /// (see [`crate::shader_checks`]).
    pub shader_checks: ShaderChecks,
    /// Time with the wall clock around many dispatches in one submit even where the
    /// adapter has timestamp queries (to compare the two clocks, or where a driver's
    /// timestamps are suspect).
    pub wall_clock: bool,
    /// Encode each launch in a compute pass of its own instead of all launches of a run
    /// in one pass (timed from the start of the first pass to the end of the last): to
    /// measure what a pass costs beside a dispatch (`vulkan_probe`).
    pub pass_per_launch: bool,
}

/// Runs `f`, turning a panic inside wgpu into [`WgpuError::Panicked`].
fn guard<T>(op: &str, f: impl FnOnce() -> T) -> Result<T, WgpuError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        WgpuError::Panicked {
            op: op.to_string(),
            message: payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".to_string()),
        }
    })
}

/// A storage buffer with what it holds.
struct GpuBuffer {
    buffer: wgpu::Buffer,
    dtype: DType,
    len: usize,
}

/// A compiled WGSL module: pipeline, layout, and the emitter's binding description.
struct Pipeline {
    wgsl: Emitted,
    layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

struct CompiledKernel {
    kernel: Kernel,
    pipeline: usize,
}

/// One launch ready to encode: its pipeline, bind group and workgroup counts.
struct Prepared {
    pipeline: usize,
    bind_group: wgpu::BindGroup,
    grid: [u32; 3],
}

/// A GPU (or CPU Vulkan driver) through wgpu.
pub struct WgpuDevice {
    target: Target,
    options: WgpuOptions,
    info: wgpu::AdapterInfo,
    device: wgpu::Device,
    queue: wgpu::Queue,
    limits: TargetLimits,
    max_binding: u64,
    timestamps: bool,
    buffers: Slab<GpuBuffer>,
    pipelines: Vec<Pipeline>,
    /// (WGSL source, created without runtime checks) → index in `pipelines`.
    by_source: HashMap<(String, bool), usize>,
    kernels: Vec<CompiledKernel>,
    /// (pipeline, grid) → index in `kernels`.
    by_launch: HashMap<(usize, [u32; 3]), usize>,
    /// Errors wgpu raised outside any error scope.
    uncaptured: Arc<Mutex<Vec<String>>>,
    /// When the last timing ended, its clocks settled: a timing that follows within
    /// [`SETTLE_AFTER_IDLE`] finds them still up and need not settle them again.
    last_timing: Mutex<Option<std::time::Instant>>,
    /// The launch lists [`Device::replay`] ran, with their bind groups, by
    /// [`crate::device::launch_key`]: a step replayed every token builds them once.
    /// Freeing any buffer drops them all (a later buffer may take a freed one's handle).
    replays: HashMap<u64, (Vec<Launch>, Vec<Prepared>)>,
}

impl std::fmt::Debug for WgpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WgpuDevice({}, {})", self.target, describe(&self.info))
    }
}

impl WgpuDevice {
    /// Opens the adapter a wgpu target names and requests a device with its limits, plus
    /// `SHADER_F16` and `TIMESTAMP_QUERY` where the adapter has them.
    pub fn open(target: &Target, options: WgpuOptions) -> Result<WgpuDevice, DeviceError> {
        let Target::Wgpu {
            backend,
            device,
            checks,
        } = *target
        else {
            return Err(DeviceError::Unavailable {
                target: target.to_string(),
                reason: "not a wgpu target".to_string(),
            });
        };
        let these = candidates(backend)?;
        if these.is_empty() {
            // Every backend's adapters, for the message only.
            let all = adapters(wgpu::Backends::all())?;
            return Err(WgpuError::NoAdapter {
                backend: backend.name().to_string(),
                found: all.iter().map(|a| describe(&a.get_info())).collect(),
                hint: no_adapter_hint(backend),
            }
            .into());
        }
        let adapter = these.get(device).ok_or(WgpuError::NoSuchAdapter {
            target: target.to_string(),
            index: device,
            count: these.len(),
        })?;
        let info = adapter.get_info();
        let webgpu = backend == WgpuBackend::WebGpu;
        // Cooperative matrices are one of wgpu's experimental features: requested where
        // the adapter reports them (VK_KHR_cooperative_matrix with the Vulkan memory
        // model, Metal's simdgroup matrices), never on the WebGPU profile.
        // Subgroup operations likewise (reductions shuffle in registers instead of a
        // shared-memory tree), never on the WebGPU profile: it holds kernels to what every
        // browser runs.
        let wanted = if webgpu {
            wgpu::Features::TIMESTAMP_QUERY
        } else {
            wgpu::Features::TIMESTAMP_QUERY
                | wgpu::Features::SHADER_F16
                | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
                | wgpu::Features::SUBGROUP
        };
        let features = adapter.features() & wanted;
        let required_limits = if webgpu {
            wgpu::Limits::default()
        } else {
            adapter.limits()
        };
        let coop = features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
        let desc = wgpu::DeviceDescriptor {
            label: Some("weft"),
            required_features: features,
            required_limits: required_limits.clone(),
            // SAFETY: the only experimental feature requested is cooperative matrices; the
            // kernels that use them are checked in the interpreter (warp-uniform operands,
            // in-bounds tiles) and their WGSL validated by naga before a pipeline is made.
            experimental_features: if coop {
                unsafe { wgpu::ExperimentalFeatures::enabled() }
            } else {
                wgpu::ExperimentalFeatures::disabled()
            },
            ..Default::default()
        };
        let (device, queue) = guard("requesting a device", || {
            pollster::block_on(adapter.request_device(&desc))
        })?
        .map_err(|e| WgpuError::RequestDevice {
            adapter: describe(&info),
            message: e.to_string(),
        })?;
        let uncaptured = Arc::new(Mutex::new(Vec::new()));
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut v) = sink.lock() {
                v.push(e.to_string());
            }
        }));
        let limits = if webgpu {
            TargetLimits::webgpu_default()
        } else {
            let l = &required_limits;
            TargetLimits {
                name: format!("{}: {}", backend.name(), info.name),
                max_shared_bytes: l.max_compute_workgroup_storage_size as u64,
                max_threads_per_block: l.max_compute_invocations_per_workgroup as u64,
                max_block_dim: [
                    l.max_compute_workgroup_size_x as u64,
                    l.max_compute_workgroup_size_y as u64,
                    l.max_compute_workgroup_size_z as u64,
                ],
                max_grid_dim: [l.max_compute_workgroups_per_dimension as u64; 3],
                f16: features.contains(wgpu::Features::SHADER_F16),
                matrix_units: if coop {
                    matrix_units(&adapter.cooperative_matrix_properties())
                } else {
                    Vec::new()
                },
                max_registers: backend.max_registers(),
                register_cap: false,
                max_buffer_bytes: l.max_storage_buffer_binding_size.min(l.max_buffer_size),
                // wgpu does not say how many compute units the adapter has.
                multiprocessors: weft_codegen_common::DEFAULT_MULTIPROCESSORS,
                // Vulkan drivers' shader compilers schedule for register pressure (not
                // measured otherwise on these machines).
                hoists_unrolled_loads: false,
                uniform_barriers: true,
                fragment_elements: false,
                shared_overlays: false,
                // WGSL orders nothing between workgroups within a dispatch.
                device_fence: false,
                // A dispatch starts after the one before it: no wait to place.
                grid_dependency: false,
                // wgpu tracks each buffer through the pass (`TargetLimits::usage_barriers`).
                usage_barriers: true,
                subgroup: features.contains(wgpu::Features::SUBGROUP).then_some(
                    weft_codegen_common::SubgroupSize {
                        min: info.subgroup_min_size,
                        max: info.subgroup_max_size,
                    },
                ),
            }
        };
        let options = WgpuOptions {
            shader_checks: checks.unwrap_or(options.shader_checks),
            ..options
        };
        Ok(WgpuDevice {
            target: target.clone(),
            options,
            info,
            max_binding: required_limits
                .max_storage_buffer_binding_size
                .min(required_limits.max_buffer_size),
            timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            device,
            queue,
            limits,
            buffers: Slab::default(),
            pipelines: Vec::new(),
            by_source: HashMap::new(),
            kernels: Vec::new(),
            by_launch: HashMap::new(),
            uncaptured,
            last_timing: Mutex::new(None),
            replays: HashMap::new(),
        })
    }

    /// The adapter this device runs on.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// True if launches are timed with timestamp queries (else wall-clock).
    pub fn has_timestamps(&self) -> bool {
        self.timestamps && !self.options.wall_clock
    }

    /// Runs `f` inside validation, out-of-memory and internal error scopes and returns
    /// the first error any of them caught.
    fn scoped<T>(&self, op: &str, f: impl FnOnce() -> T) -> Result<T, WgpuError> {
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let out = guard(op, f);
        // Scopes pop innermost first.
        let errors = [internal.pop(), oom.pop(), validation.pop()]
            .into_iter()
            .filter_map(pollster::block_on)
            .map(|e| e.to_string())
            .collect::<Vec<_>>();
        let out = out?;
        if let Some(message) = errors.into_iter().next() {
            return Err(WgpuError::Wgpu {
                op: op.to_string(),
                message,
            });
        }
        Ok(out)
    }

    /// Waits for all submitted work, then reports errors raised outside error scopes.
    fn wait(&self, op: &str) -> Result<(), WgpuError> {
        guard(op, || self.device.poll(wgpu::PollType::wait_indefinitely()))?.map_err(|e| {
            WgpuError::Wgpu {
                op: op.to_string(),
                message: e.to_string(),
            }
        })?;
        let pending: Vec<String> = match self.uncaptured.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(_) => Vec::new(),
        };
        match pending.into_iter().next() {
            Some(message) => Err(WgpuError::Wgpu {
                op: op.to_string(),
                message,
            }),
            None => Ok(()),
        }
    }

    /// Copies `size` bytes of `src` into a mappable buffer and reads them back.
    fn read_back(&self, src: &wgpu::Buffer, size: u64, op: &str) -> Result<Vec<u8>, WgpuError> {
        let staging = self.scoped(op, || {
            let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("weft readback"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            encoder.copy_buffer_to_buffer(src, 0, &staging, 0, size);
            self.queue.submit([encoder.finish()]);
            staging
        })?;
        let (tx, rx) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.wait(op)?;
        let mapped = rx.recv().map_err(|e| e.to_string()).and_then(|r| {
            r.map_err(|e| e.to_string())?;
            let view = staging.get_mapped_range(..).map_err(|e| e.to_string())?;
            Ok(view.to_vec())
        });
        staging.unmap();
        mapped.map_err(|message| WgpuError::Wgpu {
            op: op.to_string(),
            message,
        })
    }

    /// Compiles `wgsl` as the code of `kernel`, whose launch shape and parameters it
    /// follows: WGSL from `weft_codegen_wgsl::emit`, or a module written elsewhere and
    /// wrapped by [`Emitted::handwritten`] (with its bindings). Both were checked against
    /// the target's limits when they were made. [`Device::compile`] emits and calls this.
    pub fn compile_wgsl(
        &mut self,
        kernel: &Kernel,
        wgsl: Emitted,
    ) -> Result<KernelId, DeviceError> {
        // The proof is of weft's IR, not of WGSL written elsewhere: only
        // `--unchecked-shaders` drops the checks of such a module.
        let unchecked = self.options.shader_checks == ShaderChecks::Unchecked;
        let pipeline = self.pipeline_for(wgsl, &kernel.name, unchecked)?;
        Ok(self.register(kernel, pipeline))
    }

    /// Whether `kernel`, emitted by weft, is created without runtime checks.
    fn unchecked(&self, kernel: &Kernel) -> bool {
        crate::shader_checks::decide(kernel, self.options.shader_checks).unchecked
    }

    /// The kernel handle of `kernel` running `pipeline`.
    fn register(&mut self, kernel: &Kernel, pipeline: usize) -> KernelId {
        let key = (pipeline, kernel.grid);
        if let Some(&i) = self.by_launch.get(&key) {
            return KernelId(i);
        }
        self.kernels.push(CompiledKernel {
            kernel: kernel.clone(),
            pipeline,
        });
        self.by_launch.insert(key, self.kernels.len() - 1);
        KernelId(self.kernels.len() - 1)
    }

    /// `kernel`'s WGSL, emitted for (and checked once against) the adapter's limits.
    fn emit(&self, kernel: &Kernel) -> Result<Emitted, DeviceError> {
        let opts = weft_codegen_wgsl::WgslOptions {
            limits: self.limits.clone(),
        };
        weft_codegen_wgsl::emit(kernel, &opts)
            .map_err(|e| DeviceError::emit(kernel, &self.target.to_string(), e))
    }

    fn compiled(&self, id: KernelId) -> Result<&CompiledKernel, DeviceError> {
        self.kernels.get(id.0).ok_or(DeviceError::BadHandle {
            what: "kernel",
            index: id.0,
        })
    }
}

/// `x` rounded up to a multiple of `to`.
fn round_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

impl Device for WgpuDevice {
    fn target(&self) -> &Target {
        &self.target
    }

    fn name(&self) -> String {
        describe(&self.info)
    }

    fn driver(&self) -> Option<String> {
        let (d, info) = (self.info.driver.trim(), self.info.driver_info.trim());
        let text = match (d.is_empty(), info.is_empty()) {
            (true, true) => return None,
            (false, true) => d.to_string(),
            (true, false) => info.to_string(),
            (false, false) => format!("{d} {info}"),
        };
        Some(format!("{text} ({:?})", self.info.backend))
    }

    fn limits(&self) -> TargetLimits {
        self.limits.clone()
    }

    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufferId, DeviceError> {
        let bytes = (len as u64).saturating_mul(element_bytes(dtype) as u64);
        // Checked before rounding, which could overflow for an absurd length.
        if bytes > self.max_binding {
            return Err(WgpuError::BufferTooLarge {
                bytes,
                limit: self.max_binding,
            }
            .into());
        }
        let size = round_up(bytes.max(1), BUFFER_ALIGN);
        let buffer = self.scoped("allocating a buffer", || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        Ok(BufferId(self.buffers.insert(GpuBuffer {
            buffer,
            dtype,
            len,
        })))
    }

    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError> {
        // Dropped, not destroyed: wgpu frees it once no submitted work still uses it.
        self.buffers.remove(buf.0, "buffer")?;
        self.replays.clear();
        Ok(())
    }

    fn upload(&mut self, buf: BufferId, data: &TensorData) -> Result<(), DeviceError> {
        let b = self.buffers.get(buf.0, "buffer")?;
        check_upload(buf, b.dtype, b.len, data)?;
        let mut bytes = data.to_bytes();
        // Queue writes must be a multiple of 4 bytes long.
        bytes.resize(round_up(bytes.len() as u64, 4) as usize, 0);
        if !bytes.is_empty() {
            self.scoped("uploading a buffer", || {
                self.queue.write_buffer(&b.buffer, 0, &bytes)
            })?;
        }
        Ok(())
    }

    fn download(&mut self, buf: BufferId) -> Result<TensorData, DeviceError> {
        let b = self.buffers.get(buf.0, "buffer")?;
        let n = b.len * element_bytes(b.dtype);
        let dtype = storage_dtype(b.dtype);
        if n == 0 {
            return Ok(TensorData::from_bytes(dtype, &[]));
        }
        let size = round_up(n as u64, 4);
        let bytes = self.read_back(&b.buffer, size, "downloading a buffer")?;
        Ok(TensorData::from_bytes(dtype, &bytes[..n.min(bytes.len())]))
    }

    fn compile(&mut self, kernel: &Kernel) -> Result<KernelId, DeviceError> {
        let wgsl = self.emit(kernel)?;
        let unchecked = self.unchecked(kernel);
        let pipeline = self.pipeline_for(wgsl, &kernel.name, unchecked)?;
        Ok(self.register(kernel, pipeline))
    }

    fn compile_many(&mut self, kernels: &[&Kernel]) -> Vec<Result<KernelId, DeviceError>> {
        // Emitting and building pipelines (naga, then the driver's compiler) run on every
        // core; the caches are filled here, in order.
        let this = &*self;
        let built: Vec<Result<_, DeviceError>> = kernels
            .par_iter()
            .map(|k| {
                let wgsl = this.emit(k)?;
                let unchecked = this.unchecked(k);
                if this
                    .by_source
                    .contains_key(&(wgsl.source.clone(), unchecked))
                {
                    return Ok((wgsl, unchecked, None));
                }
                let pipeline = this.build_pipeline(&wgsl, &k.name, unchecked)?;
                Ok((wgsl, unchecked, Some(pipeline)))
            })
            .collect();
        built
            .into_iter()
            .zip(kernels)
            .map(|(b, kernel)| {
                let (wgsl, unchecked, pipeline) = b?;
                let pipeline = match pipeline {
                    Some(p) => self.insert_pipeline(wgsl, unchecked, p),
                    None => self.pipeline_for(wgsl, &kernel.name, unchecked)?,
                };
                Ok(self.register(kernel, pipeline))
            })
            .collect()
    }

    fn shader_checks(&self) -> Option<ShaderChecks> {
        Some(self.options.shader_checks)
    }

    fn source(&self, kernel: KernelId) -> Option<&str> {
        let ck = self.kernels.get(kernel.0)?;
        self.pipelines
            .get(ck.pipeline)
            .map(|p| p.wgsl.source.as_str())
    }

    fn launch(&mut self, kernel: KernelId, args: &[KernelArg]) -> Result<(), DeviceError> {
        let prepared = self.prepare(kernel, args)?;
        let name = self.compiled(kernel)?.kernel.name.clone();
        self.scoped(&format!("launching kernel `{name}`"), || {
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            self.encode(&mut encoder, std::slice::from_ref(&prepared), None);
            self.queue.submit([encoder.finish()]);
        })?;
        Ok(())
    }

    fn synchronize(&mut self) -> Result<(), DeviceError> {
        Ok(self.wait("synchronize")?)
    }

    fn replay(&mut self, launches: &[Launch]) -> Result<(), DeviceError> {
        // Every dispatch in one pass of one command buffer: one submission a step, its
        // bind groups built the first time (the list itself compared, not only its hash).
        let key = crate::device::launch_key(launches);
        if !self.replays.get(&key).is_some_and(|(l, _)| l == launches) {
            let prepared = launches
                .iter()
                .map(|l| self.prepare(l.kernel, &l.args))
                .collect::<Result<Vec<_>, _>>()?;
            self.replays.insert(key, (launches.to_vec(), prepared));
        }
        let prepared = &self.replays[&key].1;
        self.scoped("replaying a launch list", || {
            let mut encoder = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
            self.encode(&mut encoder, prepared, None);
            self.queue.submit([encoder.finish()]);
        })?;
        Ok(())
    }

    fn barriers(&self, launches: &[Launch]) -> Option<Result<Vec<bool>, DeviceError>> {
        Some(self.barriers_before(launches))
    }

    fn time_launches(
        &mut self,
        launches: &[Launch],
        warmup: usize,
        iters: usize,
    ) -> Result<Timing, DeviceError> {
        // Bind groups (and uniform blocks) are built once and reused by every run.
        let prepared = launches
            .iter()
            .map(|l| self.prepare(l.kernel, &l.args))
            .collect::<Result<Vec<_>, _>>()?;
        // Whether the GPU may have run too little lately to keep its clocks up: anything
        // but a timing that just ended (a check run's short burst after seconds of
        // compiling does not raise them).
        let idle = match self.last_timing.lock() {
            Ok(at) => at.is_none_or(|t| t.elapsed() > SETTLE_AFTER_IDLE),
            Err(_) => true,
        };
        // A GPU that sat idle runs at its idle clocks: warm it up (`WARM_UP`).
        let clocks = self.info.device_type != wgpu::DeviceType::Cpu;
        warm_up(warmup, clocks, MAX_WARM_UP_BATCH, |n| {
            self.submit(&prepared, n, "warm-up")
        })?;
        // Then until the clocks have settled, where the GPU may have sat idle long enough
        // for the driver to lower them (the host compiling, say: `settle`). Timings that
        // follow one another closely (a model's kernels, one by one) settle once. A
        // timing whose samples show the clocks still rising is settled and taken again
        // (at most `RETIMES` times): the driver sometimes raises them later than any
        // settling floor of a reasonable length.
        let mut settling = clocks && warmup > 0 && idle;
        let mut retimes = 0;
        let all = loop {
            if settling {
                settle(MAX_WARM_UP_BATCH, |n| {
                    let started = std::time::Instant::now();
                    self.submit(&prepared, n, "settling the clocks")?;
                    Ok::<_, WgpuError>(started.elapsed())
                })?;
            }
            let queries = self.timestamps && !self.options.wall_clock;
            let all = if queries && self.queue.get_timestamp_period() > 0.0 {
                self.time_with_queries(&prepared, iters)?
            } else {
                self.time_with_clock(&prepared, iters)?
            };
            if !(clocks && retimes < RETIMES && rising(&all)) {
                break all;
            }
            settling = true;
            retimes += 1;
        };
        if let Ok(mut at) = self.last_timing.lock() {
            *at = Some(std::time::Instant::now());
        }
        // The host's view, apart: encode, submit and wait for one run at a time.
        let mut host = Vec::with_capacity(HOST_SAMPLES);
        for _ in 0..HOST_SAMPLES {
            let started = std::time::Instant::now();
            self.submit(&prepared, 1, "a host-timed run")?;
            host.push(started.elapsed());
        }
        Timing::from_samples(all)
            .map(|t| t.with_host(host))
            .ok_or(DeviceError::NoIterations)
    }
}

/// How soon after the last timing a timing may skip settling the clocks: on the H100,
/// NVIDIA's Vulkan driver kept them up through about 0.7 s without work before it began
/// to lower them.
const SETTLE_AFTER_IDLE: std::time::Duration = std::time::Duration::from_millis(100);

/// The most times a timing taken while the clocks rose is taken again.
const RETIMES: usize = 2;

/// Runs submitted and waited for one at a time, for the host's view of a run.
const HOST_SAMPLES: usize = 5;

/// The most warm-up runs in one command buffer.
const MAX_WARM_UP_BATCH: usize = 1024;

/// The adapter's cooperative-matrix configurations weft can use (float types).
fn matrix_units(props: &[wgpu::CooperativeMatrixProperties]) -> Vec<MatrixUnit> {
    let dtype = |t: wgpu::CooperativeScalarType| match t {
        wgpu::CooperativeScalarType::F16 => Some(DType::F16),
        wgpu::CooperativeScalarType::F32 => Some(DType::F32),
        _ => None,
    };
    let mut out: Vec<MatrixUnit> = Vec::new();
    for p in props {
        if let (Some(i), Some(a)) = (dtype(p.ab_type), dtype(p.cr_type)) {
            let u = MatrixUnit::new(p.m_size, p.n_size, p.k_size, i, a);
            if !out.contains(&u) {
                out.push(u);
            }
        }
    }
    out
}
