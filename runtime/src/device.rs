//! The [`Device`] trait: what every runtime offers (allocate, upload, download, compile,
//! launch, time), and on top of it running and timing a whole [`LoweredFunc`].
//!
//! A device owns its buffers and compiled kernels and hands out small handles
//! ([`BufferId`], [`KernelId`]) for them, so the trait stays object-safe and one test or
//! benchmark loop drives `cpu`, `cuda` and `wgpu` alike through `Box<dyn Device>`.

use std::collections::HashMap;

use weft_codegen_common::TargetLimits;
use weft_ir::data::{Arg, Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::func::Param;
use weft_ir::kernel::{Access, Kernel, KernelParam, LoweredFunc};

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
    /// The driver the device runs on, with its version, where it tells
    /// (`NVIDIA 580.159.04, CUDA 13.0`; `Mesa 22.3.6`); `None` for the interpreter.
    fn driver(&self) -> Option<String> {
        None
    }
    /// Launches a compiled kernel with one argument per [`Kernel::params`] entry.
    fn launch(&mut self, kernel: KernelId, args: &[KernelArg]) -> Result<(), DeviceError>;
    /// Waits for all launched work and reports errors it raised.
    fn synchronize(&mut self) -> Result<(), DeviceError>;
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
        let staged = Staged::new(self, func, args)?;
        let result = (|| {
            for launch in &staged.launches {
                self.launch(launch.kernel, &launch.args)?;
                // Waiting after each kernel pins an error on the kernel that raised it.
                self.synchronize()?;
            }
            for (i, arg) in args.iter_mut().enumerate() {
                if let (Some(buf), true) = (staged.params[i], staged.written[i]) {
                    *arg = Arg::Tensor(self.download(buf)?);
                }
            }
            Ok(())
        })();
        staged.free(self);
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
        let staged = Staged::new(self, func, args)?;
        let result = self.time_launches(&staged.launches, warmup, iters);
        staged.free(self);
        result
    }
}

/// A function's buffers allocated and filled on a device, its kernels compiled.
struct Staged {
    /// Per parameter: its buffer (scalars: `None`).
    params: Vec<Option<BufferId>>,
    /// Per parameter: whether some kernel writes it.
    written: Vec<bool>,
    temps: Vec<BufferId>,
    launches: Vec<Launch>,
}

impl Staged {
    fn new<D: Device + ?Sized>(
        dev: &mut D,
        func: &LoweredFunc,
        args: &[Arg],
    ) -> Result<Staged, DeviceError> {
        check_args(func, args)?;
        let mut staged = Staged {
            params: vec![None; func.params.len()],
            written: vec![false; func.params.len()],
            temps: Vec::new(),
            launches: Vec::new(),
        };
        match staged.fill(dev, func, args) {
            Ok(()) => Ok(staged),
            Err(e) => {
                staged.free(dev);
                Err(e)
            }
        }
    }

    fn fill<D: Device + ?Sized>(
        &mut self,
        dev: &mut D,
        func: &LoweredFunc,
        args: &[Arg],
    ) -> Result<(), DeviceError> {
        let mut buffers: HashMap<u64, BufferId> = HashMap::new();
        let mut scalars: HashMap<u64, Scalar> = HashMap::new();
        for (i, (param, arg)) in func.params.iter().zip(args).enumerate() {
            match (param, arg) {
                (Param::Buffer(b), Arg::Tensor(data)) => {
                    let first = first_access(func, b.id());
                    self.written[i] = func.kernels.iter().any(|k| writes(k, b.id()));
                    let id = dev.alloc(b.dtype(), data.len())?;
                    self.params[i] = Some(id);
                    if first == Some(Access::Write) {
                        dev.upload(id, &TensorData::poisoned(b.dtype(), data.len()))?;
                    } else {
                        dev.upload(id, data)?;
                    }
                    buffers.insert(b.id(), id);
                }
                (Param::Scalar(v), Arg::Scalar(s)) => {
                    scalars.insert(v.id(), *s);
                }
                // `check_args` rejected every other pairing.
                _ => {}
            }
        }
        for t in &func.temps {
            let len = t.numel().max(0) as usize;
            let id = dev.alloc(t.dtype(), len)?;
            self.temps.push(id);
            dev.upload(id, &TensorData::poisoned(t.dtype(), len))?;
            buffers.insert(t.id(), id);
        }
        for k in &func.kernels {
            let kernel = dev.compile(k)?;
            let args = k
                .params
                .iter()
                .map(|p| match p {
                    KernelParam::Buffer { buffer, .. } => buffers
                        .get(&buffer.id())
                        .map(|&b| KernelArg::Buffer(b))
                        .ok_or_else(|| ArgError::UnknownBuffer {
                            func: func.name.clone(),
                            kernel: k.name.clone(),
                            buffer: buffer.name().to_string(),
                        }),
                    KernelParam::Scalar(v) => scalars
                        .get(&v.id())
                        .map(|&s| KernelArg::Scalar(s))
                        .ok_or_else(|| ArgError::UnknownScalar {
                            func: func.name.clone(),
                            kernel: k.name.clone(),
                            var: v.name().to_string(),
                        }),
                })
                .collect::<Result<Vec<_>, _>>()?;
            self.launches.push(Launch { kernel, args });
        }
        Ok(())
    }

    /// Frees every buffer; errors are ignored, since the first error is the one to report
    /// and a failed free leaks nothing the device does not reclaim when dropped.
    fn free<D: Device + ?Sized>(&self, dev: &mut D) {
        for id in self.params.iter().flatten().chain(&self.temps) {
            let _ = dev.free(*id);
        }
    }
}

fn writes(kernel: &Kernel, buffer_id: u64) -> bool {
    kernel
        .buffer_params()
        .any(|(b, a)| b.id() == buffer_id && a.writes())
}

/// How the first kernel that touches a buffer uses it.
fn first_access(func: &LoweredFunc, buffer_id: u64) -> Option<Access> {
    func.kernels
        .iter()
        .find_map(|k| k.buffer_params().find(|(b, _)| b.id() == buffer_id))
        .map(|(_, a)| a)
}

/// Checks `args` against `func.params`: count, kinds, dtypes and lengths.
pub fn check_args(func: &LoweredFunc, args: &[Arg]) -> Result<(), ArgError> {
    if args.len() != func.params.len() {
        return Err(ArgError::Count {
            func: func.name.clone(),
            expected: func.params.len(),
            got: args.len(),
        });
    }
    for (param, arg) in func.params.iter().zip(args) {
        let kind = |expected, got| ArgError::Kind {
            func: func.name.clone(),
            param: param.name().to_string(),
            expected,
            got,
        };
        match (param, arg) {
            (Param::Buffer(b), Arg::Tensor(t)) => {
                if storage_dtype(b.dtype()) != t.dtype() {
                    return Err(ArgError::DType {
                        func: func.name.clone(),
                        param: b.name().to_string(),
                        expected: b.dtype(),
                        got: t.dtype(),
                    });
                }
                let expected = b.numel().max(0) as usize;
                if t.len() != expected {
                    return Err(ArgError::Len {
                        func: func.name.clone(),
                        param: b.name().to_string(),
                        expected,
                        got: t.len(),
                    });
                }
            }
            (Param::Scalar(v), Arg::Scalar(s)) => {
                if storage_dtype(v.dtype()) != s.dtype() {
                    return Err(ArgError::DType {
                        func: func.name.clone(),
                        param: v.name().to_string(),
                        expected: v.dtype(),
                        got: s.dtype(),
                    });
                }
            }
            (Param::Buffer(_), Arg::Scalar(_)) => return Err(kind("tensor", "scalar")),
            (Param::Scalar(_), Arg::Tensor(_)) => return Err(kind("scalar", "tensor")),
        }
    }
    Ok(())
}

/// Checks launch arguments against a kernel's parameters (kinds, and for buffers the
/// dtype and element count that `buffer_info` reports for a handle).
pub(crate) fn check_launch(
    kernel: &Kernel,
    args: &[KernelArg],
    buffer_info: impl Fn(BufferId) -> Result<(DType, usize), DeviceError>,
) -> Result<(), DeviceError> {
    if args.len() != kernel.params.len() {
        return Err(ArgError::LaunchCount {
            kernel: kernel.name.clone(),
            expected: kernel.params.len(),
            got: args.len(),
        }
        .into());
    }
    for (index, (p, a)) in kernel.params.iter().zip(args).enumerate() {
        let kind = |expected| ArgError::LaunchKind {
            kernel: kernel.name.clone(),
            index,
            param: p.name().to_string(),
            expected,
        };
        match (p, a) {
            (KernelParam::Buffer { buffer, .. }, KernelArg::Buffer(id)) => {
                let (dtype, len) = buffer_info(*id)?;
                let expected_len = buffer.numel().max(0) as usize;
                if storage_dtype(dtype) != storage_dtype(buffer.dtype()) || len < expected_len {
                    return Err(ArgError::LaunchBuffer {
                        kernel: kernel.name.clone(),
                        param: buffer.name().to_string(),
                        expected: buffer.dtype(),
                        expected_len,
                        got: dtype,
                        got_len: len,
                    }
                    .into());
                }
            }
            (KernelParam::Scalar(v), KernelArg::Scalar(s)) => {
                if storage_dtype(v.dtype()) != s.dtype() {
                    return Err(kind("scalar of the parameter's dtype").into());
                }
            }
            (KernelParam::Buffer { .. }, KernelArg::Scalar(_)) => {
                return Err(kind("buffer").into());
            }
            (KernelParam::Scalar(_), KernelArg::Buffer(_)) => return Err(kind("scalar").into()),
        }
    }
    Ok(())
}

/// The dtype host data of `dtype` is held in: [`TensorData`] and [`Scalar`] have no bool
/// variant, so bools are `u32` (0 or 1).
pub fn storage_dtype(dtype: DType) -> DType {
    match dtype {
        DType::Bool => DType::U32,
        d => d,
    }
}

/// Bytes per element on a device.
pub(crate) fn element_bytes(dtype: DType) -> usize {
    match storage_dtype(dtype) {
        DType::F16 => 2,
        _ => 4,
    }
}

/// Checks that host data fits a buffer of `dtype` x `len`.
pub(crate) fn check_upload(
    buf: BufferId,
    dtype: DType,
    len: usize,
    data: &TensorData,
) -> Result<(), DeviceError> {
    if data.dtype() != storage_dtype(dtype) || data.len() != len {
        return Err(ArgError::LaunchBuffer {
            kernel: "<upload>".to_string(),
            param: format!("buffer #{}", buf.0),
            expected: dtype,
            expected_len: len,
            got: data.dtype(),
            got_len: data.len(),
        }
        .into());
    }
    Ok(())
}

/// A slab of device objects addressed by index; freed slots are reused.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    items: Vec<Option<T>>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { items: Vec::new() }
    }
}

impl<T> Slab<T> {
    pub(crate) fn insert(&mut self, item: T) -> usize {
        if let Some(i) = self.items.iter().position(Option::is_none) {
            self.items[i] = Some(item);
            i
        } else {
            self.items.push(Some(item));
            self.items.len() - 1
        }
    }
    pub(crate) fn get(&self, i: usize, what: &'static str) -> Result<&T, DeviceError> {
        self.items
            .get(i)
            .and_then(Option::as_ref)
            .ok_or(DeviceError::BadHandle { what, index: i })
    }
    pub(crate) fn get_mut(&mut self, i: usize, what: &'static str) -> Result<&mut T, DeviceError> {
        self.items
            .get_mut(i)
            .and_then(Option::as_mut)
            .ok_or(DeviceError::BadHandle { what, index: i })
    }
    pub(crate) fn remove(&mut self, i: usize, what: &'static str) -> Result<T, DeviceError> {
        self.items
            .get_mut(i)
            .and_then(Option::take)
            .ok_or(DeviceError::BadHandle { what, index: i })
    }
}
