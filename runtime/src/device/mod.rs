//! The [`Device`] trait: what every runtime offers (allocate, upload, download, compile,
//! launch, time), and on top of it running and timing a whole [`LoweredFunc`].
//!
//! A device owns its buffers and compiled kernels and hands out small handles
//! ([`BufferId`], [`KernelId`]) for them, so the trait stays object-safe and one test or
//! benchmark loop drives `cpu`, `cuda` and `wgpu` alike through `Box<dyn Device>`.
//!
//! The room also holds how a function is put on a device ([`bound`]: its parameters
//! uploaded, its kernels compiled into a launch list), the checks devices make before
//! touching memory ([`checks`]) and the [`slab::Slab`] devices keep their objects in.

pub mod bound;
mod checks;
mod slab;

use weft_codegen_common::TargetLimits;
use weft_ir::data::{Arg, Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::kernel::{Kernel, LoweredFunc};

use bound::{Bound, Params};
pub use checks::{check_args, storage_dtype};
pub(crate) use checks::{check_launch, check_upload, element_bytes};
pub(crate) use slab::Slab;

pub use crate::error::{ArgError, DeviceError};
use crate::target::Target;
pub use crate::timing::{Timing, WARM_UP};

/// A buffer allocated on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferId(pub(crate) usize);

/// A kernel compiled for a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelId(pub(crate) usize);

/// One argument of a kernel launch, in the order of [`Kernel::params`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelArg {
    Buffer(BufferId),
    Scalar(Scalar),
}

/// One kernel launch: a compiled kernel and its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// What [`Device::compile`] returned.
    pub kernel: KernelId,
    /// One per [`Kernel::params`] entry, in order.
    pub args: Vec<KernelArg>,
}

/// A launch list's identity: its kernels and arguments (buffer handles, scalars' bits).
pub(crate) fn launch_key(launches: &[Launch]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for l in launches {
        l.kernel.hash(&mut h);
        for a in &l.args {
            match a {
                KernelArg::Buffer(b) => (0u8, b.0).hash(&mut h),
                KernelArg::Scalar(Scalar::F32(v)) => (1u8, v.to_bits()).hash(&mut h),
                KernelArg::Scalar(Scalar::F16(v)) => (2u8, v.to_bits()).hash(&mut h),
                KernelArg::Scalar(Scalar::I32(v)) => (3u8, *v).hash(&mut h),
                KernelArg::Scalar(Scalar::U32(v)) => (4u8, *v).hash(&mut h),
            }
        }
    }
    launches.len().hash(&mut h);
    h.finish()
}

/// A place where lowered kernels run.
///
/// Buffers hold `len` elements of a dtype (f16 as 2 bytes; i32, u32, f32 and bool as 4).
/// [`Device::launch`] may return before the kernel finishes; [`Device::download`] and
/// [`Device::synchronize`] wait for it and report errors it raised.
pub trait Device {
    /// The target this device was opened for.
    fn target(&self) -> &Target;
    /// A human-readable name of the hardware (`"NVIDIA H200 (sm_90)"`, `"llvmpipe"`).
    fn name(&self) -> String;
    /// The limits kernels are checked against before they are compiled.
    fn limits(&self) -> TargetLimits;

    /// Allocates `len` elements of `dtype` (contents unspecified).
    fn alloc(&mut self, dtype: DType, len: usize) -> Result<BufferId, DeviceError>;
    /// Releases a buffer.
    fn free(&mut self, buf: BufferId) -> Result<(), DeviceError>;
    /// Copies `data` into `buf` (same dtype and length).
    fn upload(&mut self, buf: BufferId, data: &TensorData) -> Result<(), DeviceError>;
    /// Copies `buf` back to the host, after all launched work.
    fn download(&mut self, buf: BufferId) -> Result<TensorData, DeviceError>;

    /// Emits, checks and compiles `kernel`; compiled code is cached by source text, so
    /// compiling the same kernel twice is cheap.
    fn compile(&mut self, kernel: &Kernel) -> Result<KernelId, DeviceError>;
    /// Compiles several kernels, one result per kernel in order. Devices whose compilers
    /// are thread-safe (NVRTC, wgpu's pipeline creation) compile them on every core; the
    /// default compiles them one after another.
    fn compile_many(&mut self, kernels: &[&Kernel]) -> Vec<Result<KernelId, DeviceError>> {
        kernels.iter().map(|k| self.compile(k)).collect()
    }
    /// The source `kernel` compiled to (`None` for the interpreter).
    fn source(&self, kernel: KernelId) -> Option<&str>;
    /// Which kernels run without runtime memory checks, on devices that have them (wgpu:
    /// see [`crate::shader_checks`]); `None` elsewhere.
    fn shader_checks(&self) -> Option<crate::ShaderChecks> {
        None
    }
    /// Bytes the device can give a model's buffers now, where it tells: the free memory
    /// on CUDA, the host's available memory for the interpreter. `None` where there is no
    /// such query (wgpu: each buffer is checked against the adapter's per-buffer limit
    /// when it is allocated). A model's plan is compared with it before anything is
    /// allocated, so that a model too large is refused, not aborted.
    fn memory_available(&self) -> Option<u64> {
        None
    }
    /// The driver the device runs on, with its version, where it tells
    /// (`NVIDIA 580.159.04, CUDA 13.0`; `Mesa 22.3.6`); `None` for the interpreter.
    fn driver(&self) -> Option<String> {
        None
    }
    /// Launches a compiled kernel with one argument per [`Kernel::params`] entry.
    fn launch(&mut self, kernel: KernelId, args: &[KernelArg]) -> Result<(), DeviceError>;
    /// Waits for all launched work and reports errors it raised.
    fn synchronize(&mut self) -> Result<(), DeviceError>;
    /// Runs `launches` once, in order, as one unit where the device has one: the step
    /// of a generation loop, replayed every token with only its small inputs rewritten.
    /// The default launches them one by one (the interpreter; a device that captures a
    /// CUDA graph or records one submission overrides it). Returns before the work ends,
    /// as [`Device::launch`] does.
    fn replay(&mut self, launches: &[Launch]) -> Result<(), DeviceError> {
        for l in launches {
            self.launch(l.kernel, &l.args)?;
        }
        Ok(())
    }
    /// Per launch of `launches` run as one unit ([`Device::replay`],
    /// [`Device::time_launches`]): whether the runtime puts a barrier before it that
    /// waits for every launch before it, on a device that orders launches by the buffers
    /// they bind (wgpu: `TargetLimits::usage_barriers`). `None` where each launch follows
    /// the one before it whatever it binds (a CUDA or HIP stream, the interpreter).
    fn barriers(&self, launches: &[Launch]) -> Option<Result<Vec<bool>, DeviceError>> {
        let _ = launches;
        None
    }
    /// Runs `launches` in order `warmup` times untimed (on a GPU, with `warmup > 0`, and
    /// then more until the warm-up has lasted [`WARM_UP`]), then `iters` times, measured
    /// on the device where it can be: CUDA events around groups of back-to-back runs (so
    /// that a short kernel is not timed as the host's launch overhead), wgpu timestamp
    /// queries at the start and end of each run's passes. Each sample of the result is
    /// the time of one run.
    fn time_launches(
        &mut self,
        launches: &[Launch],
        warmup: usize,
        iters: usize,
    ) -> Result<Timing, DeviceError>;

    /// Runs `func` on `args` (one per parameter): allocates parameters and temporaries,
    /// uploads, launches every kernel in order, and downloads the parameters that kernels
    /// write back into `args`.
    ///
    /// Parameters whose first use is a pure write, and all temporaries, are filled with
    /// poison (NaN) rather than uploaded, so an element that no kernel writes shows up in a
    /// comparison with a reference.
    fn run(&mut self, func: &LoweredFunc, args: &mut [Arg]) -> Result<(), DeviceError> {
        let params = Params::upload(self, func, args)?;
        let result = Bound::new(self, func, &params).and_then(|bound| {
            let ran = bound.run_checked(self, &params).and_then(|()| {
                for &i in bound.written() {
                    if let (Some(data), Some(arg)) = (params.download(self, i)?, args.get_mut(i)) {
                        *arg = Arg::Tensor(data);
                    }
                }
                Ok(())
            });
            bound.free(self);
            ran
        });
        params.free(self);
        result
    }

    /// Times `func` on `args`: `warmup` untimed runs of the whole kernel sequence, then
    /// `iters` timed ones. Outputs are not downloaded.
    fn time(
        &mut self,
        func: &LoweredFunc,
        args: &[Arg],
        warmup: usize,
        iters: usize,
    ) -> Result<Timing, DeviceError> {
        if iters == 0 {
            return Err(DeviceError::NoIterations);
        }
        let params = Params::upload(self, func, args)?;
        let result = Bound::new(self, func, &params).and_then(|bound| {
            let timed = self.time_launches(&bound.launches, warmup, iters);
            bound.free(self);
            timed
        });
        params.free(self);
        result
    }
}
