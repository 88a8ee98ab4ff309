//! A cache update in place ([`weft_graph::op::TensorScatter`] where
//! [`weft_graph::partition::in_place`] holds): one thread per element of the new rows, each
//! stored into the cache at its row plus the batch entry's write index, read on the
//! device. The output lives in the cache's buffer (the plan homes it there), so the rows
//! of the cache no update reaches are neither read nor written: a decode step moves one
//! row per layer, not the whole cache.

use weft_graph::op::TensorScatter;
use weft_graph::partition::Group;
use weft_graph::passes::memory_order;
use weft_graph::{Graph, TensorId};
use weft_ir::func::Func;
use weft_ir::prelude::*;

use super::rules;
use super::slice::retarget_by;
use super::values::{Values, convert};
use crate::error::LowerError;

/// The function of `group` (rooted at `op`), and how it was scheduled.
pub(super) fn lower(
    g: &Graph,
    group: &Group,
    op: &TensorScatter,
    vals: &Values,
    name: &str,
) -> Result<(Func, String), LowerError> {
    let node = &g.nodes[group.root.0];
    let (past, update, write) = (node.inputs[0], node.inputs[1], node.inputs[2]);
    let cache = g.tensor(group.output);
    let rows_shape = &g.tensor(update).shape;
    let row_major = |t: TensorId| {
        let t = g.tensor(t);
        let order = memory_order(t.layout, t.shape.len());
        order.iter().enumerate().all(|(i, &d)| i == d)
    };
    if !row_major(past) || !row_major(group.output) {
        return Err(LowerError::Refused(format!(
            "the cache `{}` is not stored row-major: weft updates only row-major caches in place",
            g.tensor(past).name
        )));
    }
    let (capacity, rows) = (cache.shape[op.axis], rows_shape[op.axis]);
    // The write indices read by the stores below: a parameter of the function.
    let positions = vals.buffer(write);
    let axes: Vec<(String, i64)> = rows_shape
        .iter()
        .enumerate()
        .map(|(d, &e)| (format!("i{d}"), e as i64))
        .collect();
    let axes: Vec<(&str, i64)> = axes.iter().map(|(n, e)| (n.as_str(), *e)).collect();
    let new_rows = te::compute(&vals.fresh_name("new_rows"), &axes, |i| {
        convert(vals.at(update, i), cache.dtype)
    });
    let inputs: Vec<Buffer> = vals.buffers().into_iter().map(|(_, b)| b).collect();
    let mut func = rules::injective(name, &inputs, &new_rows).map_err(LowerError::Kernels)?;
    let shape: Vec<i64> = cache.shape.iter().map(|&d| d as i64).collect();
    let target = te::placeholder(&vals.fresh_name(&cache.name), &shape, cache.dtype);
    let axis = op.axis;
    retarget_by(&mut func, &new_rows, &target, &|idx: &mut Vec<Expr>| {
        // The batch entry's first row, clamped so that every row lands in the cache.
        let at = positions.at(std::slice::from_ref(&idx[0])).cast(DType::I32);
        let start = at.max(0).min((capacity - rows) as i64);
        idx[axis] = idx[axis].clone() + start;
    });
    Ok((
        func,
        format!(
            "rule: update in place, {} of {capacity} rows along axis {axis}",
            rows
        ),
    ))
}
