//! A compiled model: the optimized graph, its partition, one lowered function per group,
//! the buffer plan — and, once loaded onto a device ([`CompiledModel::load`]), its weights
//! uploaded once, every kernel compiled, and one launch list for the whole model, which a
//! run launches back to back and timing replays as one unit (a CUDA graph on `cuda`, one
//! command submission on wgpu: `Device::time_launches`).

use std::collections::HashMap;

use ndarray::{ArrayD, IxDyn};
use weft_codegen_common::TargetLimits;
use weft_graph::partition::{Partition, Shown, partition};
use weft_graph::passes::{
    PassReport, Precision, assign_precision, assign_weight_layouts, memory_order, optimize_without,
};
use weft_graph::{Graph, Tensor, TensorId};
use weft_ir::data::TensorData;
use weft_ir::dtype::DType;
use weft_ir::func::Param;
use weft_ir::kernel::{KernelParam, LoweredFunc};
use weft_runtime::{BufferId, Device, KernelArg, Launch, Timing};

use crate::anchor::Choices;
use crate::error::ModelError;
use crate::lower::{LoweredGroup, lower_group};
use crate::plan::{Home, Plan};

/// A model compiled for a target: everything but the device.
#[derive(Debug)]
pub struct CompiledModel {
    /// The graph after the passes.
    pub graph: Graph,
    /// What each pass changed.
    pub passes: Vec<PassReport>,
    pub partition: Partition,
    /// One per group, in run order.
    pub groups: Vec<LoweredGroup>,
    /// Each group's function lowered to kernels.
    pub lowered: Vec<LoweredFunc>,
    pub plan: Plan,
}

/// The attention pass's report where the target cannot hold the fused kernel's tiles and
/// the graph keeps attention unfused (WebGPU's 16 KiB of workgroup memory).
pub const ATTENTION_UNDONE: &str =
    "recognize attention: undone, no attention tiling fits the target's shared memory";

impl CompiledModel {
    /// Runs the graph passes, partitions, lowers every group for a target offering
    /// `limits`, and plans the buffers.
    pub fn compile(graph: &Graph, limits: &TargetLimits) -> Result<CompiledModel, ModelError> {
        Self::compile_with(graph, limits, Precision::F32)
    }

    /// [`CompiledModel::compile`] with the tensors stored in `precision` (after the
    /// graph passes, `assign_precision` chooses each tensor's type and layout). The
    /// model still takes and gives f32 row-major tensors.
    pub fn compile_with(
        graph: &Graph,
        limits: &TargetLimits,
        precision: Precision,
    ) -> Result<CompiledModel, ModelError> {
        Self::compile_choosing(graph, limits, precision, &Choices::none())
    }

    /// [`CompiledModel::compile_with`] where the anchors `choices` holds (a tuning run's,
    /// or records') take its config instead of the stated rule's.
    pub fn compile_choosing(
        graph: &Graph,
        limits: &TargetLimits,
        precision: Precision,
        choices: &Choices,
    ) -> Result<CompiledModel, ModelError> {
        Self::compile_without(graph, limits, precision, choices, &[])
    }

    /// [`CompiledModel::compile_choosing`] without the graph passes `disabled` names
    /// (keys of [`weft_graph::passes::PASSES`]): what one pass is worth, measured.
    pub fn compile_without(
        graph_in: &Graph,
        limits: &TargetLimits,
        precision: Precision,
        choices: &Choices,
        disabled: &[String],
    ) -> Result<CompiledModel, ModelError> {
        if precision.dtype() == DType::F16 && !limits.f16 {
            return Err(ModelError::Precision(format!(
                "the target `{}` has no 16-bit floats (an adapter without shader-f16?): compile in f32",
                limits.name
            )));
        }
        let (mut graph, passes) = optimize_without(graph_in, disabled)?;
        let changed = assign_precision(&mut graph, precision);
        // The attention pass only where the target holds the fused kernel's tiles: else
        // the graph again without it (two products and a softmax, as exported), and the
        // reports say why.
        let misfit = graph.nodes.iter().find_map(|n| match n.op {
            weft_graph::Op::Attention(_) => crate::lower::attention::misfit(&graph, n, limits),
            _ => None,
        });
        let attention_on = !disabled.iter().any(|d| d == "attention");
        let (mut graph, mut passes, changed) = match misfit {
            Some(_) if attention_on => {
                let mut without = disabled.to_vec();
                without.push("attention".to_string());
                let (mut g, mut p) = optimize_without(graph_in, &without)?;
                let changed = assign_precision(&mut g, precision);
                if let Some(r) = p.iter_mut().find(|r| r.pass == "recognize attention") {
                    r.pass = ATTENTION_UNDONE;
                }
                (g, p, changed)
            }
            _ => (graph, passes, changed),
        };
        passes.push(PassReport {
            pass: "assign precision and layout",
            changed,
        });
        let changed = assign_weight_layouts(&mut graph);
        passes.push(PassReport {
            pass: "store weights as the products read them",
            changed,
        });
        let partition = partition(&graph);
        let mut groups = Vec::with_capacity(partition.groups.len());
        let mut lowered = Vec::with_capacity(partition.groups.len());
        for (i, gr) in partition.groups.iter().enumerate() {
            let group = lower_group(&graph, gr, i, limits, choices)?;
            let func = weft_ir::lower::lower(&group.func).map_err(|e| ModelError::Kernel {
                kernel: group.func.name.clone(),
                what: e.to_string(),
            })?;
            groups.push(group);
            lowered.push(func);
        }
        let plan = Plan::new(&graph, &partition);
        Ok(CompiledModel {
            graph,
            passes,
            partition,
            groups,
            lowered,
            plan,
        })
    }

    /// Kernels of one run.
    pub fn kernel_count(&self) -> usize {
        self.lowered.iter().map(|f| f.kernels.len()).sum()
    }

    /// The partition with each kernel's schedule, as `weft model graph` prints it.
    pub fn show(&self) -> String {
        let schedules: Vec<String> = self.groups.iter().map(|g| g.schedule.clone()).collect();
        Shown {
            graph: &self.graph,
            partition: &self.partition,
            schedules: Some(&schedules),
        }
        .to_string()
    }

    /// Uploads the weights, allocates the planned buffers and compiles every kernel on
    /// `dev`.
    pub fn load(&self, dev: &mut dyn Device) -> Result<Loaded, ModelError> {
        let mut loaded = Loaded {
            tensors: HashMap::new(),
            owned: Vec::new(),
            launches: Vec::new(),
            launch_group: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            poisoned: Vec::new(),
        };
        match self.fill(dev, &mut loaded) {
            Ok(()) => Ok(loaded),
            Err(e) => {
                loaded.free(dev);
                Err(e)
            }
        }
    }

    fn fill(&self, dev: &mut dyn Device, l: &mut Loaded) -> Result<(), ModelError> {
        let g = &self.graph;
        let mut slots = Vec::with_capacity(self.plan.slots.len());
        for s in &self.plan.slots {
            let id = dev.alloc(s.dtype, s.len)?;
            l.owned.push(id);
            l.poisoned.push((id, s.dtype, s.len));
            slots.push(id);
        }
        let mut homes: Vec<(&TensorId, &Home)> = self.plan.homes.iter().collect();
        homes.sort_by_key(|(t, _)| t.0);
        for (&t, home) in homes {
            let tensor = g.tensor(t);
            let id = match home {
                Home::Slot(s) => slots[*s],
                _ => {
                    let id = dev.alloc(tensor.dtype, tensor.numel())?;
                    l.owned.push(id);
                    id
                }
            };
            match home {
                Home::Weight => {
                    // A constant's data is there: it is what makes it a weight.
                    let data = tensor.data.as_ref().expect("a weight has data");
                    dev.upload(id, &to_device(tensor, data))?;
                }
                Home::Output(_) => l.poisoned.push((id, tensor.dtype, tensor.numel())),
                _ => {}
            }
            l.tensors.insert(t, id);
        }
        l.inputs = g.inputs.iter().map(|t| (*t, l.tensors[t])).collect();
        l.outputs = g.outputs.iter().map(|t| (*t, l.tensors[t])).collect();

        let all: Vec<&weft_ir::kernel::Kernel> =
            self.lowered.iter().flat_map(|f| f.kernels.iter()).collect();
        let compiled = dev.compile_many(&all);
        let mut compiled = compiled.into_iter();
        for (gi, (group, func)) in self.groups.iter().zip(&self.lowered).enumerate() {
            let mut buffers: HashMap<u64, BufferId> = HashMap::new();
            let params = func.params.iter().filter_map(|p| match p {
                Param::Buffer(b) => Some(b),
                Param::Scalar(_) => None,
            });
            for (b, t) in params.zip(&group.params) {
                buffers.insert(b.id(), l.tensors[t]);
            }
            for t in &func.temps {
                let len = t.numel().max(0) as usize;
                let id = dev.alloc(t.dtype(), len)?;
                l.owned.push(id);
                buffers.insert(t.id(), id);
            }
            for k in &func.kernels {
                let kernel = compiled
                    .next()
                    .unwrap_or_else(|| unreachable!("one result per kernel"))
                    .map_err(|source| ModelError::Device {
                        kernel: k.name.clone(),
                        source,
                    })?;
                let args = k
                    .params
                    .iter()
                    .map(|p| match p {
                        KernelParam::Buffer { buffer, .. } => buffers
                            .get(&buffer.id())
                            .map(|&b| KernelArg::Buffer(b))
                            .ok_or_else(|| ModelError::Kernel {
                                kernel: k.name.clone(),
                                what: format!("buffer `{}` has no device buffer", buffer.name()),
                            }),
                        KernelParam::Scalar(v) => Err(ModelError::Kernel {
                            kernel: k.name.clone(),
                            what: format!("scalar parameter `{}` has no value", v.name()),
                        }),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                l.launches.push(Launch { kernel, args });
                l.launch_group.push(gi);
            }
        }
        Ok(())
    }
}

/// A compiled model on a device: buffers, weights and kernels, ready to run.
#[derive(Debug)]
pub struct Loaded {
    tensors: HashMap<TensorId, BufferId>,
    /// Every buffer this load allocated (freed by [`Loaded::free`]).
    owned: Vec<BufferId>,
    /// The whole model, kernel after kernel.
    pub launches: Vec<Launch>,
    /// Which group each launch belongs to.
    pub launch_group: Vec<usize>,
    inputs: Vec<(TensorId, BufferId)>,
    outputs: Vec<(TensorId, BufferId)>,
    /// Outputs and intermediates, poisoned (NaN) before a checked run so that an
    /// element no kernel writes shows.
    poisoned: Vec<(BufferId, DType, usize)>,
}

impl Loaded {
    /// Runs the model on `inputs` (one per graph input, in its shape) and returns its
    /// outputs. Outputs and intermediates are poisoned first; each kernel is waited for,
    /// so that an error names the kernel that raised it.
    pub fn run(
        &self,
        model: &CompiledModel,
        dev: &mut dyn Device,
        inputs: &[ArrayD<f32>],
    ) -> Result<Vec<ArrayD<f32>>, ModelError> {
        let g = &model.graph;
        if inputs.len() != self.inputs.len() {
            return Err(ModelError::Input {
                name: g.name.clone(),
                what: format!(
                    "the model takes {} inputs, {} given",
                    self.inputs.len(),
                    inputs.len()
                ),
            });
        }
        for (&(t, id), x) in self.inputs.iter().zip(inputs) {
            let tensor = g.tensor(t);
            if x.shape() != tensor.shape.as_slice() {
                return Err(ModelError::Input {
                    name: tensor.name.clone(),
                    what: format!(
                        "shape {:?} given, the model takes {:?}",
                        x.shape(),
                        tensor.shape
                    ),
                });
            }
            dev.upload(id, &to_device(tensor, x))?;
        }
        for &(id, dtype, len) in &self.poisoned {
            dev.upload(id, &TensorData::poisoned(dtype, len))?;
        }
        for (launch, &gi) in self.launches.iter().zip(&self.launch_group) {
            let name = || model.groups[gi].func.name.clone();
            dev.launch(launch.kernel, &launch.args)
                .and_then(|()| dev.synchronize())
                .map_err(|source| ModelError::Device {
                    kernel: name(),
                    source,
                })?;
        }
        self.outputs(model, dev)
    }

    /// The outputs as the device holds them now, without running: after [`Loaded::time`],
    /// what its last timed run wrote (the launches back to back, overlapped as the
    /// target overlaps them), to compare with a checked [`Loaded::run`].
    pub fn outputs(
        &self,
        model: &CompiledModel,
        dev: &mut dyn Device,
    ) -> Result<Vec<ArrayD<f32>>, ModelError> {
        self.outputs
            .iter()
            .map(|&(t, id)| {
                let data = dev.download(id)?;
                from_device(model.graph.tensor(t), &data)
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
        Ok(dev.time_launches(&self.launches, warmup, iters)?)
    }

    /// Times each group's kernels alone (`iters` runs each, after a warm-up): where the
    /// model's time goes. One timing per group, in run order.
    pub fn time_each(
        &self,
        dev: &mut dyn Device,
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<Timing>, ModelError> {
        let groups = self.launch_group.iter().copied().max().map_or(0, |m| m + 1);
        (0..groups)
            .map(|gi| {
                let launches: Vec<Launch> = self
                    .launches
                    .iter()
                    .zip(&self.launch_group)
                    .filter(|(_, g)| **g == gi)
                    .map(|(l, _)| l.clone())
                    .collect();
                Ok(dev.time_launches(&launches, warmup, iters)?)
            })
            .collect()
    }

    /// Frees every buffer of the load.
    pub fn free(&self, dev: &mut dyn Device) {
        for &id in &self.owned {
            let _ = dev.free(id);
        }
    }
}

/// `data` (logical order, f32) as the device stores tensor `t`: in memory order, in its
/// storage type (a weight's f32 data rounded to f16 here, once, at load).
fn to_device(t: &Tensor, data: &ArrayD<f32>) -> TensorData {
    let order = memory_order(t.layout, t.shape.len());
    let view = data.view().permuted_axes(IxDyn(&order));
    match t.dtype {
        DType::F16 => TensorData::F16(view.iter().map(|&v| half::f16::from_f32(v)).collect()),
        // Integers (token ids, gather indices) come as f32, exact to 2^24; toward zero.
        DType::I32 => TensorData::I32(view.iter().map(|&v| v as i32).collect()),
        DType::Bool | DType::U32 => {
            TensorData::U32(view.iter().map(|&v| u32::from(v != 0.0)).collect())
        }
        DType::F32 => TensorData::F32(view.iter().copied().collect()),
    }
}

/// What the device holds of tensor `t`, back in logical order and f32.
fn from_device(t: &Tensor, data: &TensorData) -> Result<ArrayD<f32>, ModelError> {
    let order = memory_order(t.layout, t.shape.len());
    let stored: Vec<usize> = order.iter().map(|&d| t.shape[d]).collect();
    let values: Vec<f32> = data.to_f64_vec().into_iter().map(|v| v as f32).collect();
    let array = ArrayD::from_shape_vec(IxDyn(&stored), values).map_err(|e| ModelError::Kernel {
        kernel: t.name.clone(),
        what: e.to_string(),
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
