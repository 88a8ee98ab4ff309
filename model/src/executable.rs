//! A compiled model on a device ([`Executable`]): its weights uploaded once, its buffers
//! allocated as the plan placed them, every kernel compiled, and each group's function
//! bound to those buffers the one way `weft_runtime` binds a function
//! ([`weft_runtime::Params::borrowed`], [`weft_runtime::Bound`]). It holds what a run
//! needs — its kernels, launch list and input and output tensors — and never the
//! compiled model: a run launches the groups back to back, and timing replays them as one
//! unit (a CUDA graph on `cuda`, one command submission on wgpu:
//! `Device::time_launches`). A load first compares the plan with the memory the device
//! has available, and refuses a model too large before allocating anything; a run ends
//! by reading the index guards' flags ([`crate::guard`]).

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};
use weft_graph::passes::memory_order;
use weft_graph::{Graph, Layout, Tensor, TensorId};
use weft_ir::data::TensorData;
use weft_ir::dtype::DType;
use weft_runtime::{Bound, BufferId, Device, Launch, Params, Timing};

use crate::error::ModelError;
use crate::guard::IndexGuard;
use crate::lower::LoweredGroup;
use crate::plan::{Home, Plan};

/// A graph input or output as the executable holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoTensor {
    pub name: String,
    /// The logical (ONNX) shape: what a caller gives or takes.
    pub shape: Vec<usize>,
    /// How the device stores it (a caller always gives and takes f32).
    pub dtype: DType,
    pub layout: Layout,
    pub buffer: BufferId,
}

/// One group of the model on the device: its function's kernels bound to the model's
/// buffers, with the temporaries of its own.
#[derive(Debug)]
pub struct LoadedGroup {
    /// The group's function (`k012_layer1_0_conv1`): what an error in it names.
    pub name: String,
    /// How it was scheduled (`weft model graph` prints it).
    pub schedule: String,
    bound: Bound,
}

impl LoadedGroup {
    /// Its kernels, in order, with their arguments.
    pub fn launches(&self) -> &[Launch] {
        &self.bound.launches
    }
}

/// A compiled model on a device: buffers, weights and kernels, ready to run.
#[derive(Debug)]
pub struct Executable {
    /// The model's name (an input error names it).
    name: String,
    /// One per partition group, in run order.
    groups: Vec<LoadedGroup>,
    pub(crate) inputs: Vec<IoTensor>,
    outputs: Vec<IoTensor>,
    /// The index guards' flags, read after every run ([`crate::guard`]).
    guards: Vec<(IoTensor, IndexGuard)>,
    /// The plan its buffers were placed by.
    plan: Plan,
    /// Outputs and intermediates, poisoned (NaN) before a checked run so that an
    /// element no kernel writes shows.
    poisoned: Vec<(BufferId, DType, usize)>,
    /// Every buffer this load allocated but the groups' temporaries (freed by
    /// [`Executable::free`]).
    owned: Vec<BufferId>,
    /// The weights' buffers by tensor name (another load may share them).
    weights: HashMap<String, BufferId>,
    /// The symbolic dimensions a run gives, with the inputs their values go in (not
    /// among `inputs`): `crate::symbolic`.
    pub(crate) symbols: Symbols,
}

impl Executable {
    /// Uploads the weights of `graph` (a compiled model's: after the passes), allocates
    /// the buffers `plan` places, and compiles and binds the kernels of `groups` (one
    /// per partition group, in run order) on `dev`, with `guards` (whose flags are among
    /// the graph's outputs): what `CompiledModel::load` does with its parts. On an error,
    /// what was allocated is freed.
    pub fn load(
        graph: &Graph,
        groups: &[LoweredGroup],
        plan: &Plan,
        guards: &[IndexGuard],
        dev: &mut dyn Device,
    ) -> Result<Executable, ModelError> {
        Executable::load_sharing(graph, groups, plan, guards, &HashMap::new(), dev)
    }

    /// [`Executable::load`], the graph inputs and weights `shared` names bound to the
    /// buffers it gives (of their dtype, layout and size; a weight's holding its data)
    /// instead of buffers of their own: state that several executables keep between
    /// runs (a KV cache the prefill and decode steps both update in place), and weights
    /// they both read. The caller owns those buffers; [`Executable::free`] leaves them.
    pub fn load_sharing(
        graph: &Graph,
        groups: &[LoweredGroup],
        plan: &Plan,
        guards: &[IndexGuard],
        shared: &HashMap<String, BufferId>,
        dev: &mut dyn Device,
    ) -> Result<Executable, ModelError> {
        fits(graph, plan, dev, memory_override()?)?;
        let mut exe = Executable {
            name: graph.name.clone(),
            groups: Vec::with_capacity(groups.len()),
            inputs: Vec::new(),
            outputs: Vec::new(),
            guards: Vec::new(),
            plan: plan.clone(),
            poisoned: Vec::new(),
            owned: Vec::new(),
            weights: HashMap::new(),
            symbols: Default::default(),
        };
        match exe.fill(graph, groups, guards, shared, dev) {
            Ok(()) => Ok(exe),
            Err(e) => {
                exe.free(dev);
                Err(e)
            }
        }
    }

    fn fill(
        &mut self,
        g: &Graph,
        groups: &[LoweredGroup],
        guards: &[IndexGuard],
        shared: &HashMap<String, BufferId>,
        dev: &mut dyn Device,
    ) -> Result<(), ModelError> {
        let mut slots = Vec::with_capacity(self.plan.slots.len());
        for s in &self.plan.slots {
            let id = dev.alloc(s.dtype, s.len)?;
            self.owned.push(id);
            self.poisoned.push((id, s.dtype, s.len));
            slots.push(id);
        }
        let mut tensors: HashMap<TensorId, BufferId> = HashMap::new();
        let mut homes: Vec<(&TensorId, &Home)> = self.plan.homes.iter().collect();
        homes.sort_by_key(|(t, _)| t.0);
        for (&t, home) in homes {
            let tensor = g.tensor(t);
            let id = match home {
                Home::Slot(s) => slots[*s],
                // An empty input (one nothing reads: `Graph::check_sizes`) still has a
                // buffer, of one element, since a device need not make an empty one.
                Home::Input(_) | Home::Weight if shared.contains_key(&tensor.name) => {
                    shared[&tensor.name]
                }
                Home::Input(_) => {
                    let id = dev.alloc(tensor.dtype, tensor.numel().max(1))?;
                    self.owned.push(id);
                    id
                }
                Home::Weight | Home::Output(_) => {
                    let id = dev.alloc(tensor.dtype, tensor.numel())?;
                    self.owned.push(id);
                    id
                }
                // The input's own buffer (an input's id is below its readers' outputs',
                // so it is placed already).
                Home::InPlace(input) => {
                    *tensors
                        .get(input)
                        .ok_or_else(|| ModelError::WeightWithoutData {
                            tensor: tensor.name.clone(),
                        })?
                }
            };
            match home {
                Home::Weight if shared.contains_key(&tensor.name) => {}
                Home::Weight => {
                    self.weights.insert(tensor.name.clone(), id);
                    let data =
                        tensor
                            .data
                            .as_ref()
                            .ok_or_else(|| ModelError::WeightWithoutData {
                                tensor: tensor.name.clone(),
                            })?;
                    dev.upload(id, &to_device(tensor, data))?;
                }
                Home::Output(_) => self.poisoned.push((id, tensor.dtype, tensor.numel())),
                Home::Input(_) | Home::Slot(_) | Home::InPlace(_) => {}
            }
            tensors.insert(t, id);
        }
        let io = |t: &TensorId| {
            let tensor = g.tensor(*t);
            IoTensor {
                name: tensor.name.clone(),
                shape: tensor.shape.clone(),
                dtype: tensor.dtype,
                layout: tensor.layout,
                buffer: tensors[t],
            }
        };
        self.inputs = g.inputs.iter().map(io).collect();
        let flag = |t: &TensorId| guards.iter().any(|gd| gd.flag == *t);
        self.outputs = g.outputs.iter().filter(|t| !flag(t)).map(io).collect();
        self.guards = guards.iter().map(|gd| (io(&gd.flag), gd.clone())).collect();

        // Every kernel of the model compiled at once (in parallel where the device can).
        let all: Vec<&weft_ir::kernel::Kernel> = groups
            .iter()
            .flat_map(|gr| gr.kernels.kernels.iter())
            .collect();
        let mut compiled = dev.compile_many(&all).into_iter();
        for group in groups {
            let func = &group.kernels;
            let mut ids = Vec::with_capacity(func.kernels.len());
            for k in &func.kernels {
                let id = compiled
                    .next()
                    .unwrap_or_else(|| unreachable!("one result per kernel"))
                    .map_err(|source| ModelError::Device {
                        kernel: k.name.clone(),
                        source,
                    })?;
                ids.push(id);
            }
            let on_device = |source| ModelError::Device {
                kernel: group.func.name.clone(),
                source,
            };
            let buffers: Vec<BufferId> = group.params.iter().map(|t| tensors[t]).collect();
            let params = Params::borrowed(func, &buffers).map_err(on_device)?;
            let bound = Bound::with_kernels(dev, func, &params, &ids).map_err(on_device)?;
            self.groups.push(LoadedGroup {
                name: group.func.name.clone(),
                schedule: group.schedule.clone(),
                bound,
            });
        }
        Ok(())
    }

    /// The buffers of the weights this load uploaded, by tensor name.
    pub fn weight_buffers(&self) -> &HashMap<String, BufferId> {
        &self.weights
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its groups, in run order.
    pub fn groups(&self) -> &[LoadedGroup] {
        &self.groups
    }

    /// The graph inputs a run takes, in order.
    pub fn input_tensors(&self) -> &[IoTensor] {
        &self.inputs
    }

    /// The graph outputs a run gives, in order.
    pub fn output_tensors(&self) -> &[IoTensor] {
        &self.outputs
    }

    /// The plan its buffers were placed by.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The whole model, kernel after kernel.
    pub fn launches(&self) -> Vec<Launch> {
        self.groups
            .iter()
            .flat_map(|g| g.launches().iter().cloned())
            .collect()
    }

    /// Runs the model on `inputs` (one per graph input, in its shape) and returns its
    /// outputs. Outputs, intermediates and temporaries are poisoned first; each kernel is
    /// waited for, so that an error names the group that raised it; an index the run
    /// computed out of range is an error ([`Executable::check_guards`]).
    ///
    /// A model with symbolic dimensions runs here at each one's maximum, the size its
    /// inputs were built at; [`Executable::run_at`] runs it at any length of the range.
    pub fn run(
        &self,
        dev: &mut dyn Device,
        inputs: &[ArrayD<f32>],
    ) -> Result<Vec<ArrayD<f32>>, ModelError> {
        self.symbols.upload_maxima(dev)?;
        self.run_as_built(dev, inputs)
    }

    /// [`Executable::run`] on inputs at the graph's shapes, the symbols' values (where
    /// there are any) already on the device.
    pub(crate) fn run_as_built(
        &self,
        dev: &mut dyn Device,
        inputs: &[ArrayD<f32>],
    ) -> Result<Vec<ArrayD<f32>>, ModelError> {
        if inputs.len() != self.inputs.len() {
            return Err(ModelError::Input {
                name: self.name.clone(),
                what: format!(
                    "the model takes {} inputs, {} given",
                    self.inputs.len(),
                    inputs.len()
                ),
            });
        }
        for (io, x) in self.inputs.iter().zip(inputs) {
            if x.shape() != io.shape.as_slice() {
                return Err(ModelError::Input {
                    name: io.name.clone(),
                    what: format!(
                        "shape {:?} given, the model takes {:?}",
                        x.shape(),
                        io.shape
                    ),
                });
            }
            if !x.is_empty() {
                dev.upload(io.buffer, &stored(io.dtype, io.layout, x))?;
            }
        }
        for &(id, dtype, len) in &self.poisoned {
            dev.upload(id, &TensorData::poisoned(dtype, len))?;
        }
        for group in &self.groups {
            group.bound.poison_temps(dev)?;
        }
        for group in &self.groups {
            for launch in group.launches() {
                dev.launch(launch.kernel, &launch.args)
                    .and_then(|()| dev.synchronize())
                    .map_err(|source| ModelError::Device {
                        kernel: group.name.clone(),
                        source,
                    })?;
            }
        }
        self.check_guards(dev)?;
        self.outputs(dev)
    }

    /// Uploads `x` (logical order, f32) into graph input `i`'s buffer: what a caller that
    /// replays [`Executable::launches`] itself writes before each replay.
    pub fn set_input(
        &self,
        dev: &mut dyn Device,
        i: usize,
        x: &ArrayD<f32>,
    ) -> Result<(), ModelError> {
        let io = &self.inputs[i];
        if x.shape() != io.shape.as_slice() {
            return Err(ModelError::Input {
                name: io.name.clone(),
                what: format!(
                    "shape {:?} given, the model takes {:?}",
                    x.shape(),
                    io.shape
                ),
            });
        }
        Ok(dev.upload(io.buffer, &stored(io.dtype, io.layout, x))?)
    }

    /// Output `i` as the device holds it now (one download).
    pub fn output(&self, dev: &mut dyn Device, i: usize) -> Result<ArrayD<f32>, ModelError> {
        let io = &self.outputs[i];
        logical(io, &dev.download(io.buffer)?)
    }

    /// Reads every index guard's flag (one small download each): an error naming the
    /// first node whose indices the last run computed out of range.
    pub fn check_guards(&self, dev: &mut dyn Device) -> Result<(), ModelError> {
        for (io, guard) in &self.guards {
            let flag = logical(io, &dev.download(io.buffer)?)?;
            // Anything but 0 (NaN too: a flag no kernel wrote) fails the run.
            if flag.iter().any(|&v| v != 0.0) {
                return Err(ModelError::IndexOutOfRange {
                    node: guard.node.clone(),
                    op: guard.op,
                    indices: guard.indices.clone(),
                    rows: guard.rows.clone(),
                });
            }
        }
        Ok(())
    }

    /// The outputs as the device holds them now, without running: after
    /// [`Executable::time`], what its last timed run wrote (the launches back to back,
    /// overlapped as the target overlaps them), to compare with a checked
    /// [`Executable::run`].
    pub fn outputs(&self, dev: &mut dyn Device) -> Result<Vec<ArrayD<f32>>, ModelError> {
        self.outputs
            .iter()
            .map(|io| {
                let data = dev.download(io.buffer)?;
                logical(io, &data)
            })
            .collect()
    }

    /// Times the whole launch list as one unit: `warmup` untimed runs, then `iters` timed.
    pub fn time(
        &self,
        dev: &mut dyn Device,
        warmup: usize,
        iters: usize,
    ) -> Result<Timing, ModelError> {
        // The index guards are not read here: a timing may run on buffers no caller
        // filled (`weft model bench`), whose indices mean nothing; a run reads them.
        Ok(dev.time_launches(&self.launches(), warmup, iters)?)
    }

    /// Times each group's kernels alone (`iters` runs each, after a warm-up): where the
    /// model's time goes. One timing per group, in run order; zero for a group that
    /// launches nothing of its own (its kernel joined to an earlier group's).
    pub fn time_each(
        &self,
        dev: &mut dyn Device,
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<Timing>, ModelError> {
        self.groups
            .iter()
            .map(|g| {
                if g.launches().is_empty() {
                    // A group whose kernel runs inside another's (`crate::horizontal`):
                    // its time is that kernel's.
                    return Ok(Timing {
                        median: std::time::Duration::ZERO,
                        min: std::time::Duration::ZERO,
                        all: Vec::new(),
                        host: None,
                    });
                }
                Ok(dev.time_launches(g.launches(), warmup, iters)?)
            })
            .collect()
    }

    /// Frees every buffer of the load: the planned ones and each group's temporaries.
    pub fn free(&self, dev: &mut dyn Device) {
        for g in &self.groups {
            g.bound.free(dev);
        }
        for &id in &self.owned {
            let _ = dev.free(id);
        }
    }
}

/// What an executable holds of its symbols: each one's range and where the model's
/// inputs and outputs hold it, and the inputs their values go in.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    pub(crate) binding: weft_graph::symbolic::Binding,
    /// One per symbol of `binding`, in order.
    pub(crate) values: Vec<IoTensor>,
}

impl Symbols {
    /// Puts `values` (one per symbol, in order) in the inputs the masks read.
    pub(crate) fn upload(&self, dev: &mut dyn Device, values: &[usize]) -> Result<(), ModelError> {
        for (io, &n) in self.values.iter().zip(values) {
            dev.upload(io.buffer, &TensorData::F32(vec![n as f32]))?;
        }
        Ok(())
    }

    /// Every symbol at its maximum: the sizes the graph was built at.
    pub(crate) fn upload_maxima(&self, dev: &mut dyn Device) -> Result<(), ModelError> {
        let maxima: Vec<usize> = self.binding.symbols.iter().map(|s| s.max).collect();
        self.upload(dev, &maxima)
    }
}

/// The environment variable that sets the bytes a device has available for a model
/// (a whole number), in place of what the device says: how tests force a small device.
pub const MEMORY_ENV: &str = "WEFT_DEVICE_MEMORY";

/// The bytes [`MEMORY_ENV`] sets, where it is set.
fn memory_override() -> Result<Option<u64>, ModelError> {
    match std::env::var(MEMORY_ENV) {
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(b) => Ok(Some(b)),
            Err(_) => Err(ModelError::MemoryOverride(v)),
        },
        Err(_) => Ok(None),
    }
}

/// Refuses a plan larger than the memory `dev` has available (or `forced` says), before
/// anything is allocated: a typed error naming the largest tensors, not an allocation
/// that aborts or fails halfway.
pub(crate) fn fits(
    g: &Graph,
    plan: &Plan,
    dev: &dyn Device,
    forced: Option<u64>,
) -> Result<(), ModelError> {
    let Some(available) = forced.or_else(|| dev.memory_available()) else {
        return Ok(());
    };
    let need = plan.need(g);
    if need.bytes <= available {
        return Ok(());
    }
    Err(ModelError::TooLargeForDevice {
        need,
        device: format!("{} ({})", dev.target(), dev.name()),
        available,
        forced: forced.is_some(),
    })
}

/// `data` (logical order, f32) as the device stores tensor `t`: in memory order, in its
/// storage type (a weight's f32 data rounded to f16 here, once, at load).
fn to_device(t: &Tensor, data: &ArrayD<f32>) -> TensorData {
    stored(t.dtype, t.layout, data)
}

/// `data` (logical order, f32) stored as `dtype` in `layout`'s memory order.
fn stored(dtype: DType, layout: Layout, data: &ArrayD<f32>) -> TensorData {
    let order = memory_order(layout, data.ndim());
    let view = data.view().permuted_axes(IxDyn(&order));
    match dtype {
        DType::F16 => TensorData::F16(view.iter().map(|&v| half::f16::from_f32(v)).collect()),
        // Integers (token ids, gather indices) come as f32, exact to 2^24; toward zero.
        DType::I32 => TensorData::I32(view.iter().map(|&v| v as i32).collect()),
        DType::Bool | DType::U32 => {
            TensorData::U32(view.iter().map(|&v| u32::from(v != 0.0)).collect())
        }
        DType::F32 => TensorData::F32(view.iter().copied().collect()),
    }
}

/// What the device holds of `io`, back in logical order and f32.
fn logical(io: &IoTensor, data: &TensorData) -> Result<ArrayD<f32>, ModelError> {
    let order = memory_order(io.layout, io.shape.len());
    let stored: Vec<usize> = order.iter().map(|&d| io.shape[d]).collect();
    let values: Vec<f32> = data.to_f64_vec().into_iter().map(|v| v as f32).collect();
    let array =
        ArrayD::from_shape_vec(IxDyn(&stored), values).map_err(|source| ModelError::Download {
            tensor: io.name.clone(),
            source,
        })?;
    // Logical dimension d is stored at the position where `order` names it.
    let back: Vec<usize> = (0..order.len())
        .map(|d| order.iter().position(|&o| o == d).unwrap_or(d))
        .collect();
    Ok(array
        .permuted_axes(IxDyn(&back))
        .as_standard_layout()
        .into_owned())
}
