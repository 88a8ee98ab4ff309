//! A lowered function bound to device buffers: its parameters uploaded ([`Params`]), its
//! temporaries allocated and its kernels compiled into a launch list ([`Bound`]).
//!
//! This is the one way weft puts a function on a device. [`crate::Device::run`] and
//! [`crate::Device::time`] bind a function for one run; the tuner uploads the parameters
//! once and binds every config of a space to them; the measurement driver binds a
//! schedule, runs it once on poisoned outputs, checks and times it; a compiled model binds
//! each group's function to the buffers of its plan ([`Params::borrowed`]).

use std::collections::HashMap;

use weft_ir::data::{Arg, Scalar, TensorData};
use weft_ir::dtype::DType;
use weft_ir::func::Param;
use weft_ir::kernel::{Access, Kernel, KernelParam, LoweredFunc};

use super::{BufferId, Device, KernelArg, KernelId, Launch, check_args};
use crate::error::{ArgError, DeviceError};

/// A function's parameters on a device: one buffer per tensor argument, uploaded once
/// (any number of functions of the same signature may be bound to them), and the scalar
/// arguments.
#[derive(Debug)]
pub struct Params {
    /// Per parameter: its buffer (scalars: `None`).
    buffers: Vec<Option<BufferId>>,
    /// Per parameter: its dtype and length (scalars: their dtype, 0).
    shapes: Vec<(DType, usize)>,
    /// Per parameter: the scalar argument (tensors: `None`).
    scalars: Vec<Option<Scalar>>,
    /// Whether the buffers are this value's to free (not where they are borrowed).
    owned: bool,
}

impl Params {
    /// Allocates a buffer per tensor of `args` (one per parameter of `func`, checked
    /// against it) and uploads it.
    pub fn upload<D: Device + ?Sized>(
        dev: &mut D,
        func: &LoweredFunc,
        args: &[Arg],
    ) -> Result<Params, DeviceError> {
        check_args(func, args)?;
        let mut params = Params {
            buffers: Vec::with_capacity(args.len()),
            shapes: Vec::with_capacity(args.len()),
            scalars: Vec::with_capacity(args.len()),
            owned: true,
        };
        for (param, arg) in func.params.iter().zip(args) {
            match (param, arg) {
                (Param::Buffer(b), Arg::Tensor(data)) => {
                    let id = match dev.alloc(b.dtype(), data.len()) {
                        Ok(id) => id,
                        Err(e) => {
                            params.free(dev);
                            return Err(e);
                        }
                    };
                    params.buffers.push(Some(id));
                    params.shapes.push((b.dtype(), data.len()));
                    params.scalars.push(None);
                    if let Err(e) = dev.upload(id, data) {
                        params.free(dev);
                        return Err(e);
                    }
                }
                (_, Arg::Scalar(s)) => {
                    params.buffers.push(None);
                    params.shapes.push((s.dtype(), 0));
                    params.scalars.push(Some(*s));
                }
                // `check_args` rejected a tensor for a scalar parameter.
                (Param::Scalar(v), Arg::Tensor(_)) => {
                    params.free(dev);
                    return Err(ArgError::Kind {
                        func: func.name.clone(),
                        param: v.name().to_string(),
                        expected: "scalar",
                        got: "tensor",
                    }
                    .into());
                }
            }
        }
        Ok(params)
    }

    /// Parameters over buffers allocated elsewhere, one per parameter of `func`, in order
    /// (a whole model's buffers, which its plan shares between functions):
    /// [`Params::free`] leaves them to their owner. `func` must take tensors only.
    pub fn borrowed(func: &LoweredFunc, buffers: &[BufferId]) -> Result<Params, DeviceError> {
        if buffers.len() != func.params.len() {
            return Err(ArgError::Count {
                func: func.name.clone(),
                expected: func.params.len(),
                got: buffers.len(),
            }
            .into());
        }
        let mut shapes = Vec::with_capacity(buffers.len());
        for param in &func.params {
            match param {
                Param::Buffer(b) => shapes.push((b.dtype(), b.numel().max(0) as usize)),
                Param::Scalar(v) => {
                    return Err(ArgError::Kind {
                        func: func.name.clone(),
                        param: v.name().to_string(),
                        expected: "scalar",
                        got: "buffer",
                    }
                    .into());
                }
            }
        }
        Ok(Params {
            buffers: buffers.iter().copied().map(Some).collect(),
            shapes,
            scalars: vec![None; buffers.len()],
            owned: false,
        })
    }

    /// The buffer of parameter `index` (`None` for a scalar or an index out of range).
    pub fn buffer(&self, index: usize) -> Option<BufferId> {
        self.buffers.get(index).copied().flatten()
    }

    /// Downloads parameter `index`.
    pub fn download<D: Device + ?Sized>(
        &self,
        dev: &mut D,
        index: usize,
    ) -> Result<Option<TensorData>, DeviceError> {
        self.buffer(index).map(|b| dev.download(b)).transpose()
    }

    /// Frees every buffer (none where they are [borrowed](Params::borrowed)); errors are
    /// ignored, since the first error is the one to report and a failed free leaks nothing
    /// the device does not reclaim when dropped.
    pub fn free<D: Device + ?Sized>(&self, dev: &mut D) {
        if !self.owned {
            return;
        }
        for id in self.buffers.iter().flatten() {
            let _ = dev.free(*id);
        }
    }
}

/// A function bound to [`Params`]: its own temporaries and its launch list.
#[derive(Debug)]
pub struct Bound {
    /// Every kernel of the function, in order, with its arguments.
    pub launches: Vec<Launch>,
    temps: Vec<(BufferId, DType, usize)>,
    /// The temporaries that are counters ([`LoweredFunc::counters`]): zeroed once when
    /// allocated, never poisoned, since every launch that completes leaves them at zero.
    counters: Vec<BufferId>,
    /// Parameters whose first use is a pure write (outputs): poisoned before a checked
    /// run, so that an element no kernel writes shows up as NaN.
    outputs: Vec<usize>,
    /// Parameters some kernel writes (downloaded after a run).
    written: Vec<usize>,
}

impl Bound {
    /// Binds `func` to `params`, compiling its kernels on `dev`.
    pub fn new<D: Device + ?Sized>(
        dev: &mut D,
        func: &LoweredFunc,
        params: &Params,
    ) -> Result<Bound, DeviceError> {
        let mut kernels = Vec::with_capacity(func.kernels.len());
        for k in &func.kernels {
            kernels.push(dev.compile(k)?);
        }
        Bound::with_kernels(dev, func, params, &kernels)
    }

    /// Binds `func` to `params` with its kernels compiled already as `kernels` (one per
    /// kernel, in order: [`Device::compile_many`] for many functions at once).
    pub fn with_kernels<D: Device + ?Sized>(
        dev: &mut D,
        func: &LoweredFunc,
        params: &Params,
        kernels: &[KernelId],
    ) -> Result<Bound, DeviceError> {
        let mut bound = Bound {
            launches: Vec::with_capacity(func.kernels.len()),
            temps: Vec::new(),
            counters: Vec::new(),
            outputs: Vec::new(),
            written: Vec::new(),
        };
        match bound.fill(dev, func, params, kernels) {
            Ok(()) => Ok(bound),
            Err(e) => {
                bound.free(dev);
                Err(e)
            }
        }
    }

    fn fill<D: Device + ?Sized>(
        &mut self,
        dev: &mut D,
        func: &LoweredFunc,
        params: &Params,
        kernels: &[KernelId],
    ) -> Result<(), DeviceError> {
        let mut buffers: HashMap<u64, BufferId> = HashMap::new();
        let mut scalars: HashMap<u64, Scalar> = HashMap::new();
        for (i, param) in func.params.iter().enumerate() {
            match param {
                Param::Buffer(b) => {
                    if let Some(id) = params.buffer(i) {
                        buffers.insert(b.id(), id);
                    }
                    if first_access(func, b.id()) == Some(Access::Write) {
                        self.outputs.push(i);
                    }
                    if func.kernels.iter().any(|k| writes(k, b.id())) {
                        self.written.push(i);
                    }
                }
                Param::Scalar(v) => {
                    if let Some(s) = params.scalars.get(i).copied().flatten() {
                        scalars.insert(v.id(), s);
                    }
                }
            }
        }
        let counters: Vec<u64> = func.counters().iter().map(|b| b.id()).collect();
        for t in &func.temps {
            let len = t.numel().max(0) as usize;
            let id = dev.alloc(t.dtype(), len)?;
            self.temps.push((id, t.dtype(), len));
            buffers.insert(t.id(), id);
            if counters.contains(&t.id()) {
                dev.upload(id, &TensorData::zeros(t.dtype(), len))?;
                self.counters.push(id);
            }
        }
        for (k, &kernel) in func.kernels.iter().zip(kernels) {
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

    /// Poisons the outputs (parameters whose first use is a write) and the temporaries,
    /// then launches every kernel in order, waiting after each so that an error is pinned
    /// on the kernel that raised it. The outputs are then on the device, in `params`.
    pub fn run_checked<D: Device + ?Sized>(
        &self,
        dev: &mut D,
        params: &Params,
    ) -> Result<(), DeviceError> {
        for &i in &self.outputs {
            if let (Some(id), Some(&(dtype, len))) = (params.buffer(i), params.shapes.get(i)) {
                dev.upload(id, &TensorData::poisoned(dtype, len))?;
            }
        }
        self.poison_temps(dev)?;
        for launch in &self.launches {
            dev.launch(launch.kernel, &launch.args)?;
            dev.synchronize()?;
        }
        Ok(())
    }

    /// Fills the temporaries with poison (NaN), so that an element a kernel reads before
    /// any kernel wrote it shows: what a checked run does first. Counters keep their
    /// zeros: a kernel that left one non-zero then fails the run after it.
    pub fn poison_temps<D: Device + ?Sized>(&self, dev: &mut D) -> Result<(), DeviceError> {
        for &(id, dtype, len) in &self.temps {
            if !self.counters.contains(&id) {
                dev.upload(id, &TensorData::poisoned(dtype, len))?;
            }
        }
        Ok(())
    }

    /// The parameters some kernel writes, by index: what a run gives back.
    pub fn written(&self) -> &[usize] {
        &self.written
    }

    /// Frees the temporaries (the parameters belong to [`Params`]).
    pub fn free<D: Device + ?Sized>(&self, dev: &mut D) {
        for &(id, _, _) in &self.temps {
            let _ = dev.free(id);
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
