//! Each group of a partition lowered to one scheduled, fused [`Func`] (the Hidet paper's
//! step 4): its anchor by a template — the implicit-GEMM convolution on the matmul
//! template, the depthwise template, the matmul template for Gemm/MatMul, the attention
//! template for Attention — with its
//! prologues inlined into the template's loads and its epilogue chain into its stores;
//! everything else by the rule-based schedules ([`rules`]).
//!
//! Which variant an anchor takes is a stated rule (`choose_conv`): a dense convolution
//! is an implicit GEMM, a grouped one an implicit GEMM per group (narrow groups packed
//! into block-diagonal products); a depthwise one with "same" padding and a square
//! window takes the depthwise template (any element type and layout); any other
//! depthwise one the direct convolution under the reduction rule.

pub(crate) mod attention;
pub(crate) mod choose;
mod conv;
mod conv_grouped;
mod gated;
mod gemm;
mod narrow;
mod pool;
mod pool_nhwc;
mod pool_vec;
mod resident;
mod row_norm;
mod rows;
pub mod siblings;
mod slice;
mod update;
pub(crate) mod values;

pub use conv::POINTWISE_ENV;
pub use pool_nhwc::{POOL_SPLIT_ENV, chunk as pool_chunk};
pub use pool_vec::POOL_VEC_ENV;

pub(crate) use gemm::gemv_computes;
pub(crate) use weft_kernels::rules;

use std::collections::{BTreeMap, HashMap};

use weft_codegen_common::TargetLimits;
use weft_graph::op::{Anchor, Reduction, Role, Window};
use weft_graph::partition::{Group, GroupKind, Slice, in_place};
use weft_graph::passes::{TargetQuery, memory_order};
use weft_graph::{Graph, Node, TensorId};
use weft_ir::func::{Func, Param};
use weft_ir::kernel::LoweredFunc;
use weft_ir::prelude::*;

use crate::anchor::{AnchorKey, Choices};
use crate::error::{LowerError, ModelError};
use values::{Values, convert, in_logical_order, in_memory_order};

/// How a group's kernel runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Horizontal {
    /// As its own kernel (or kernels).
    #[default]
    Alone,
    /// Its kernel also runs the kernels of these later groups, in block order after its
    /// own ([`crate::horizontal::fuse`]).
    Carries(Vec<usize>),
    /// Its kernel runs inside this earlier group's; it launches nothing itself.
    CarriedBy(usize),
}

/// A group as a function, and the function as kernels: its parameters are graph
/// tensors.
#[derive(Clone, Debug)]
pub struct LoweredGroup {
    /// Scheduled and fused.
    pub func: Func,
    /// `func` lowered to kernels by `weft_ir::lower`: what a device compiles and runs.
    pub kernels: LoweredFunc,
    /// The tensor each buffer parameter of `func` holds, in order (the output: the
    /// group's output, or the Concat it writes a slice of).
    pub params: Vec<TensorId>,
    /// How it was scheduled: the template and its config, or the rule.
    pub schedule: String,
    /// The anchor it schedules on a matmul template, which tuning can choose for.
    pub anchor: Option<AnchorKey>,
    /// Whether its kernel runs alone or joined with others' ([`crate::horizontal`]).
    pub horizontal: Horizontal,
}

/// Lowers group `index` of a partition of `g` for a target offering `limits`; the
/// tensors `places` holds (the partition's) are read and written in the buffers it says.
/// `beside`: what of it the rule may leave whole for the anchors that run beside it
/// ([`siblings`]).
pub fn lower_group(
    g: &Graph,
    places: &BTreeMap<TensorId, Slice>,
    group: &Group,
    index: usize,
    limits: &TargetLimits,
    choices: &Choices,
    beside: siblings::Beside,
) -> Result<LoweredGroup, ModelError> {
    let root = &g.nodes[group.root.0];
    let name = kernel_name(index, &root.name);
    // An injective group computes its root inline too: its value is the stored output.
    let root_inline = (group.kind == GroupKind::Injective).then_some(group.root);
    let inline = group
        .prologue
        .iter()
        .chain(&group.epilogue)
        .copied()
        .chain(root_inline);
    let vals = Values::new(g, places, inline);
    let fail = |source: LowerError| ModelError::Lower {
        node: root.name.clone(),
        op: root.op.name(),
        source: Box::new(source),
    };
    // The group's stored output as a te compute of the value of its last tensor: over
    // its dimensions in memory order, rounded to its storage type once.
    let out_tensor = g.tensor(group.output);
    let order = memory_order(out_tensor.layout, out_tensor.shape.len());
    let axes: Vec<(String, i64)> = order
        .iter()
        .map(|&d| (format!("i{d}"), out_tensor.shape[d] as i64))
        .collect();
    let output = |vals: &Values| -> Buffer {
        let axes: Vec<(&str, i64)> = axes.iter().map(|(n, e)| (n.as_str(), *e)).collect();
        let out_name = vals.fresh_name(&out_tensor.name);
        te::compute(&out_name, &axes, |i| {
            let value = vals.at(group.output, &in_logical_order(&order, i));
            convert(value, out_tensor.dtype)
        })
    };
    let chooser = Chooser {
        limits,
        choices,
        beside,
    };
    // Each lowering family takes what it reads of the op: the one dispatch over how
    // ops are computed (the op's module says which family it is, `OpDef::role`).
    let (func, schedule, anchor) = match root.op.role() {
        Role::Anchor(Anchor::Conv(c)) => conv::lower(g, group, c, &vals, &name, &chooser, output)?,
        Role::Anchor(Anchor::Product(p)) => {
            gemm::lower(g, group, p, &vals, &name, &chooser, output)?
        }
        Role::Anchor(Anchor::Attention(a)) => {
            let (func, schedule) =
                attention::lower(g, group, a, &vals, &name, &chooser, output).map_err(fail)?;
            (func, schedule, None)
        }
        Role::Reduction(Reduction::Rows(r)) => {
            let (func, schedule) =
                rows::lower(g, group, r, &vals, &name, limits, output).map_err(fail)?;
            (func, schedule, None)
        }
        Role::Reduction(Reduction::Reduce(r)) => {
            let (func, schedule) =
                rows::reduce(g, group, r, &vals, &name, limits, &order, output).map_err(fail)?;
            (func, schedule, None)
        }
        Role::Reduction(Reduction::Window(Window::Global(gp)))
            if pool::global_as_rows(g, group)
                && pool_nhwc::takes(g, group, limits)
                && pool_nhwc::switched_on().map_err(fail)? =>
        {
            // Over a channels-last image: two reductions whose threads walk channels
            // (`pool_nhwc`), where a row per channel would read a sector a load.
            let (func, schedule) =
                pool_nhwc::lower(g, group, gp, &vals, &name, output).map_err(fail)?;
            (func, schedule, None)
        }
        Role::Reduction(Reduction::Window(Window::Global(gp)))
            if pool::global_as_rows(g, group) =>
        {
            // A global pool over a large image is a row reduction (a row per channel):
            // the row template's threads share each row, where the rule would give each
            // output one thread walking the whole image serially.
            let (func, schedule) = rows::reduce(
                g,
                group,
                &pool::global_as_reduce(gp),
                &vals,
                &name,
                limits,
                &order,
                output,
            )
            .map_err(fail)?;
            (func, schedule, None)
        }
        Role::Reduction(Reduction::Window(Window::Pool(p)))
            if pool_vec::lanes(g, group, p, &vals).is_some()
                && pool_vec::switched_on().map_err(fail)? =>
        {
            // Over a channels-last image: a vector of channels a thread, each tap one
            // 16-byte load (`pool_vec`), where the rule loads one element a tap.
            let lanes = pool_vec::lanes(g, group, p, &vals)
                .ok_or_else(|| fail(LowerError::Refused("no vector of channels".into())))?;
            let func = pool_vec::lower(g, group, p, lanes, &vals, &name, output).map_err(fail)?;
            (func, pool_vec::what(lanes), None)
        }
        Role::Reduction(Reduction::Window(w)) => {
            let (red, divisor) = pool::reduced(g, group, w, &vals, &order);
            let inputs: Vec<Buffer> = vals.buffers().into_iter().map(|(_, b)| b).collect();
            // The f32 sums in the output's memory order; stored as they are where the
            // output is f32 and nothing divides them, else through an epilogue that
            // divides (an average) and rounds.
            let out = if out_tensor.dtype == DType::F32 && divisor.is_none() {
                red.clone()
            } else {
                let (read, order) = (red.clone(), order.clone());
                vals.set_root(
                    group.output,
                    Box::new(move |ix: &[Expr]| {
                        let sum = read.at(&in_memory_order(&order, ix));
                        match &divisor {
                            Some(count) => sum / count(ix),
                            None => sum,
                        }
                    }),
                );
                output(&vals)
            };
            let func = rules::reduction(&name, &inputs, &red, &out)
                .map_err(|e| fail(LowerError::Kernels(e)))?;
            (
                func,
                "rule: reduction, one thread per output".to_string(),
                None,
            )
        }
        Role::Update(u) if in_place(g, group.root) => {
            let (func, schedule) = update::lower(g, group, u, &vals, &name).map_err(fail)?;
            (func, schedule, None)
        }
        // An update that cannot write its input's buffer is a copy with the rows in.
        Role::Injective(_) | Role::Join { .. } | Role::Update(_) => {
            let out = output(&vals);
            let inputs: Vec<Buffer> = vals.buffers().into_iter().map(|(_, b)| b).collect();
            let func =
                rules::injective(&name, &inputs, &out).map_err(|e| fail(LowerError::Kernels(e)))?;
            (
                func,
                format!("rule: injective, {}", rules::injective_what(out.numel())),
                None,
            )
        }
    };
    let (func, params) = finish(g, group, func, &vals).map_err(fail)?;
    let kernels = weft_ir::lower::lower(&func).map_err(|source| ModelError::Kernel {
        kernel: func.name.clone(),
        source,
    })?;
    Ok(LoweredGroup {
        func,
        kernels,
        params,
        schedule,
        anchor,
        horizontal: Default::default(),
    })
}

/// The lowering's answers to the graph passes about a target
/// ([`weft_graph::passes::TargetQuery`]): what it can hold, before anything is lowered.
pub(crate) struct Lowering<'a> {
    pub(crate) limits: &'a TargetLimits,
}

impl TargetQuery for Lowering<'_> {
    fn attention_fits(&self, g: &Graph, node: &Node, dtype: DType) -> Result<(), String> {
        match attention::misfit(g, node, self.limits, dtype) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }
}

/// What an anchor's lowering chooses its config with: the target's limits and the
/// choices of a tuning run.
pub(crate) struct Chooser<'a> {
    pub(crate) limits: &'a TargetLimits,
    pub(crate) choices: &'a Choices,
    /// What of the anchor the rule may leave whole for its siblings ([`siblings`]).
    pub(crate) beside: siblings::Beside,
}

/// Maps the function's buffer parameters to tensors and retargets the output into its
/// Concat slice: the function and the tensor each parameter holds.
fn finish(
    g: &Graph,
    group: &Group,
    mut func: Func,
    vals: &Values,
) -> Result<(Func, Vec<TensorId>), LowerError> {
    let known: HashMap<u64, TensorId> = vals
        .buffers()
        .into_iter()
        .map(|(t, b)| (b.id(), t))
        .collect();
    // The one parameter that is not an input is the output (fusion puts it last).
    let out_buffer = match func.params.last() {
        Some(Param::Buffer(b)) if !known.contains_key(&b.id()) => b.clone(),
        Some(Param::Buffer(_) | Param::Scalar(_)) | None => {
            return Err(LowerError::Refused(
                "the kernel has no output parameter".into(),
            ));
        }
    };
    let mut params = Vec::new();
    for p in &func.params {
        match p {
            Param::Buffer(b) if b.id() == out_buffer.id() => {
                params.push(group.slice.map_or(group.output, |s| s.buffer));
            }
            Param::Buffer(b) => params.push(*known.get(&b.id()).ok_or_else(|| {
                LowerError::Refused(format!("parameter `{}` holds no graph tensor", b.name()))
            })?),
            Param::Scalar(v) => {
                return Err(LowerError::Refused(format!(
                    "unexpected scalar parameter `{}`",
                    v.name()
                )));
            }
        }
    }
    if let Some(s) = group.slice {
        // The partition slices only into a Concat of the same type and layout: the
        // output's memory order is the concatenation's.
        let whole = g.tensor(s.buffer);
        let order = memory_order(whole.layout, whole.shape.len());
        let shape: Vec<i64> = in_memory_order(&order, &whole.shape)
            .into_iter()
            .map(|d| d as i64)
            .collect();
        let axis = order.iter().position(|&d| d == s.axis).ok_or_else(|| {
            LowerError::Refused(format!("the Concat's axis {} is not a dimension", s.axis))
        })?;
        let name = vals.fresh_name(&whole.name);
        let target = te::placeholder(&name, &shape, whole.dtype);
        slice::retarget(&mut func, &out_buffer, &target, axis, s.offset as i64);
    }
    Ok((func, params))
}

/// `k012_layer1_0_conv1`: the kernel's index and its root node, as an identifier.
fn kernel_name(index: usize, node: &str) -> String {
    let clean: String = node
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let mut clean = clean.trim_matches('_').to_string();
    clean.truncate(40);
    format!("k{index:03}_{clean}")
}
