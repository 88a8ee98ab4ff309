//! Row reductions: softmax, layer norm and ReduceSum/Mean/Max/Min, each one kernel on
//! the row-reduction template (`weft_kernels::rows`: a warp or a block per row,
//! its threads combining through a shared-memory tree), over a `[rows, n]` view of the
//! input whose producers post-scheduling fusion inlines into the loads, with the
//! group's epilogue (a layer norm's scale and bias, a cast, what follows) fused into
//! the stores. Where the rows are very long and too few to give every multiprocessor a
//! block, the template's rule ([`RowParams::rule`]) splits each row into chunks, a block
//! each, over two kernels (partial states, then their combination), with the same
//! prologue and epilogue fusion.
//!
//! Where fusion refuses the epilogue, they fall back to the rule-based schedules:
//! softmax and layer norm as a few kernels — their statistics per row (max and sum; mean
//! and variance), each one thread per row, then one thread per element normalizing —
//! and the reductions one thread per output. That is right for any shape on every
//! target, and slow for long rows.

use weft_codegen_common::TargetLimits;
use weft_graph::op::{LayerNorm, Reduce, ReduceKind, Rows as RowsOp, Softmax};
use weft_graph::partition::Group;
use weft_graph::{Graph, TensorId};
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_kernels::rows::{RowOp, RowParams, describe, template_over};
use weft_kernels::split_k::join;

use super::rules;
use super::values::{Values, broadcast_index, in_logical_order, reindex};
use crate::error::LowerError;

/// ReduceSum/Mean/Max/Min of group `group` as a te reduction over the output's
/// dimensions in `order` (its memory order).
fn reduced(
    g: &Graph,
    group: &Group,
    op: &Reduce,
    vals: &Values,
    order: &[usize],
) -> Result<Buffer, LowerError> {
    let node = &g.nodes[group.root.0];
    let Reduce {
        kind,
        axes,
        keep_dims,
    } = op;
    let x = node.inputs[0];
    let xs = g.tensor(x).shape.clone();
    let ys = &g.tensor(node.output).shape;
    let reduce: Vec<IterVar> = axes
        .iter()
        .map(|&a| te::reduce_axis(&format!("r{a}"), xs[a] as i64))
        .collect();
    let count: usize = axes.iter().map(|&a| xs[a]).product();
    let out_axes: Vec<(String, i64)> = order
        .iter()
        .map(|&d| (format!("i{d}"), ys[d] as i64))
        .collect();
    let mut out_axes: Vec<(&str, i64)> = out_axes.iter().map(|(n, e)| (n.as_str(), *e)).collect();
    if out_axes.is_empty() {
        // A reduction to a scalar: one output, one thread.
        out_axes.push(("i", 1));
    }
    Ok(te::compute("reduced", &out_axes, |ix| {
        let ix = if order.is_empty() {
            Vec::new()
        } else {
            in_logical_order(order, ix)
        };
        // The input's index: reduced dimensions from the reduce axes, the others from
        // the output's (skipping its kept 1s, or in order where they were dropped).
        let mut kept = ix.iter();
        let at: Vec<Expr> = (0..xs.len())
            .map(|d| match axes.iter().position(|&a| a == d) {
                Some(k) => {
                    if *keep_dims {
                        kept.next();
                    }
                    reduce[k].expr()
                }
                None => kept.next().cloned().unwrap_or_else(|| Expr::int(0)),
            })
            .collect();
        let v = vals.at(x, &at);
        let refs: Vec<&IterVar> = reduce.iter().collect();
        match kind {
            ReduceKind::Sum => te::sum(v, &refs),
            ReduceKind::Mean => te::sum(v * (1.0 / count as f64) as f32, &refs),
            ReduceKind::Max => te::max(v, &refs),
            ReduceKind::Min => te::min(v, &refs),
        }
    }))
}

/// The rows of a row reduction: the input's dimensions outside the row (`outer`, one
/// row each) and inside it, with their extents.
struct Rows {
    outer: Vec<usize>,
    inner: Vec<usize>,
    outer_shape: Vec<usize>,
    inner_shape: Vec<usize>,
    rows: usize,
    n: usize,
}

impl Rows {
    fn of(xs: &[usize], inner: Vec<usize>) -> Rows {
        let outer: Vec<usize> = (0..xs.len()).filter(|d| !inner.contains(d)).collect();
        let outer_shape: Vec<usize> = outer.iter().map(|&d| xs[d]).collect();
        let inner_shape: Vec<usize> = inner.iter().map(|&d| xs[d]).collect();
        Rows {
            rows: outer_shape.iter().product(),
            n: inner_shape.iter().product(),
            outer,
            inner,
            outer_shape,
            inner_shape,
        }
    }

    /// The flat row of the outer indices `ix` (one per outer dimension).
    fn row(&self, ix: &[Expr]) -> Expr {
        if self.outer.is_empty() {
            Expr::int(0)
        } else {
            reindex(&self.outer_shape, &[self.rows], ix).remove(0)
        }
    }

    /// The flat column of the row indices `ix` (one per row dimension).
    fn col(&self, ix: &[Expr]) -> Expr {
        reindex(&self.inner_shape, &[self.n], ix).remove(0)
    }

    /// `x` of `vals` as the `[rows, n]` view the template reads, in f32.
    fn view(&self, vals: &Values, x: TensorId, rank: usize) -> Buffer {
        te::compute(
            "x_rows",
            &[("r", self.rows as i64), ("j", self.n as i64)],
            |ix| {
                let mut at = vec![Expr::int(0); rank];
                if !self.outer.is_empty() {
                    let o = reindex(&[self.rows], &self.outer_shape, &ix[..1]);
                    for (&d, e) in self.outer.iter().zip(o) {
                        at[d] = e;
                    }
                }
                let i = reindex(&[self.n], &self.inner_shape, &ix[1..]);
                for (&d, e) in self.inner.iter().zip(i) {
                    at[d] = e;
                }
                vals.at_as(x, &at, DType::F32)
            },
        )
    }
}

/// Softmax or layer norm of group `group` as one kernel on the row-reduction template,
/// its config by the stated rule for `limits`; by the rule-based schedules where fusion
/// refuses the group's epilogue. `output` makes the group's stored output once the
/// root's value is set.
pub(crate) fn lower<'g>(
    g: &'g Graph,
    group: &Group,
    row_op: RowsOp<'_>,
    vals: &Values<'g>,
    name: &str,
    limits: &TargetLimits,
    output: impl Fn(&Values) -> Buffer,
) -> Result<(Func, String), LowerError> {
    let node = &g.nodes[group.root.0];
    let x = node.inputs[0];
    let xs = g.tensor(x).shape.clone();
    let (op, inner) = match row_op {
        RowsOp::Softmax(&Softmax { axis }) => (RowOp::Softmax, vec![axis]),
        RowsOp::LayerNorm(&LayerNorm { axis, epsilon, rms }) => (
            if rms {
                RowOp::RmsNorm {
                    epsilon: epsilon as f32,
                }
            } else {
                RowOp::LayerNorm {
                    epsilon: epsilon as f32,
                }
            },
            (axis..xs.len()).collect(),
        ),
    };
    let rows = Rows::of(&xs, inner);
    let (r, n) = (rows.rows as i64, rows.n as i64);
    let (p, why) = RowParams::rule(limits, r, n);
    let view = rows.view(vals, x, xs.len());
    let y = te::placeholder("y_rows", &[r, n], DType::F32);
    let (y_read, params) = (y.clone(), node.inputs[1..].to_vec());
    let norm = matches!(op, RowOp::LayerNorm { .. } | RowOp::RmsNorm { .. });
    vals.set_root_reading(
        node.output,
        Box::new(move |v: &Values, ix: &[Expr]| {
            let outer: Vec<Expr> = rows.outer.iter().map(|&d| ix[d].clone()).collect();
            let inner: Vec<Expr> = rows.inner.iter().map(|&d| ix[d].clone()).collect();
            let value = y_read.at(&[rows.row(&outer), rows.col(&inner)]);
            if !norm {
                return value;
            }
            // The scale and bias broadcast over the normalized dimensions.
            let param = |t: TensorId| v.at(t, &broadcast_index(&g.tensor(t).shape, &inner));
            match params.as_slice() {
                [scale] => value * param(*scale),
                [scale, bias, ..] => value * param(*scale) + param(*bias),
                [] => value,
            }
        }),
    );
    let out = output(vals);
    let fused = template_over(name, &view, &y, op, &p)
        .map_err(LowerError::from)
        .and_then(|anchor| fuse(&anchor, &out).map_err(LowerError::from));
    match fused {
        Ok(f) => Ok((f.func, format!("{} ({why})", describe(op, &p, n)))),
        Err(e) => {
            let (func, schedule) = by_rule(g, group, row_op, vals, name, output)?;
            Ok((func, format!("{schedule} (the template's epilogue: {e})")))
        }
    }
}

/// ReduceSum/Mean/Max/Min of group `group` as one kernel on the row-reduction template
/// (its rows: the kept dimensions, each row the reduced ones); by the reduction rule
/// where fusion refuses the epilogue. `order` is the output's memory order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce<'g>(
    g: &'g Graph,
    group: &Group,
    reduce_op: &Reduce,
    vals: &Values<'g>,
    name: &str,
    limits: &TargetLimits,
    order: &[usize],
    output: impl Fn(&Values) -> Buffer,
) -> Result<(Func, String), LowerError> {
    let node = &g.nodes[group.root.0];
    let Reduce {
        kind,
        axes,
        keep_dims,
    } = reduce_op;
    let x = node.inputs[0];
    let xs = g.tensor(x).shape.clone();
    let mut inner = axes.clone();
    inner.sort_unstable();
    let rows = Rows::of(&xs, inner);
    let (r, n) = (rows.rows as i64, rows.n as i64);
    let op = match kind {
        ReduceKind::Sum => RowOp::Sum,
        ReduceKind::Mean => RowOp::Mean,
        ReduceKind::Max => RowOp::Max,
        ReduceKind::Min => RowOp::Min,
    };
    let (p, why) = RowParams::rule(limits, r, n);
    let view = rows.view(vals, x, xs.len());
    let y = te::placeholder("y_rows", &[r], DType::F32);
    let (y_read, keep) = (y.clone(), *keep_dims);
    vals.set_root(
        node.output,
        Box::new(move |ix: &[Expr]| {
            // The output's indices of the kept dimensions: all but the reduced 1s where
            // they are kept, all of them where they were dropped.
            let outer: Vec<Expr> = if keep {
                rows.outer.iter().map(|&d| ix[d].clone()).collect()
            } else {
                ix.to_vec()
            };
            y_read.at(&[rows.row(&outer)])
        }),
    );
    let out = output(vals);
    let fused = template_over(name, &view, &y, op, &p)
        .map_err(LowerError::from)
        .and_then(|anchor| fuse(&anchor, &out).map_err(LowerError::from));
    match fused {
        Ok(f) => Ok((f.func, format!("{} ({why})", describe(op, &p, n)))),
        Err(e) => {
            let red = reduced(g, group, reduce_op, vals, order)?;
            let inputs: Vec<Buffer> = vals.buffers().into_iter().map(|(_, b)| b).collect();
            let (read, order) = (red.clone(), order.to_vec());
            vals.set_root(
                node.output,
                Box::new(move |ix: &[Expr]| read.at(&super::values::in_memory_order(&order, ix))),
            );
            let out = output(vals);
            let func = rules::reduction(name, &inputs, &red, &out).map_err(LowerError::Kernels)?;
            Ok((
                func,
                format!("rule: reduction, one thread per output (the template's epilogue: {e})"),
            ))
        }
    }
}

/// Softmax or layer norm of group `group` by the rule-based schedules, as one function
/// of a few kernels; `output` makes the group's stored output once the root's value is
/// set.
fn by_rule<'g>(
    g: &'g Graph,
    group: &Group,
    row_op: RowsOp<'_>,
    vals: &Values<'g>,
    name: &str,
    output: impl Fn(&Values) -> Buffer,
) -> Result<(Func, String), LowerError> {
    let node = &g.nodes[group.root.0];
    let x = node.inputs[0];
    let xs = g.tensor(x).shape.clone();
    // The row's dimensions, and the rest (one statistic each).
    let row_dims: Vec<usize> = match row_op {
        RowsOp::Softmax(&Softmax { axis }) => vec![axis],
        RowsOp::LayerNorm(&LayerNorm { axis, .. }) => (axis..xs.len()).collect(),
    };
    let outer: Vec<usize> = (0..xs.len()).filter(|d| !row_dims.contains(d)).collect();
    let stat_axes: Vec<(String, i64)> = outer
        .iter()
        .map(|&d| (format!("i{d}"), xs[d] as i64))
        .collect();
    let stat_axes: Vec<(&str, i64)> = if stat_axes.is_empty() {
        vec![("i", 1)]
    } else {
        stat_axes.iter().map(|(n, e)| (n.as_str(), *e)).collect()
    };
    let n: usize = row_dims.iter().map(|&d| xs[d]).product();
    // x at statistic index `s` (over `outer`) and row index `r` (over `row_dims`).
    let x_at = |s: &[Expr], r: &[Expr]| -> Expr {
        let mut at = vec![Expr::int(0); xs.len()];
        for (k, &d) in outer.iter().enumerate() {
            at[d] = s[k].clone();
        }
        for (k, &d) in row_dims.iter().enumerate() {
            at[d] = r[k].clone();
        }
        vals.at(x, &at)
    };
    // An element's statistic index: its outer dimensions.
    let outer_dims = outer.clone();
    let stat_of = move |ix: &[Expr]| -> Vec<Expr> {
        if outer_dims.is_empty() {
            vec![Expr::int(0)]
        } else {
            outer_dims.iter().map(|&d| ix[d].clone()).collect()
        }
    };
    let reduce_axes = || -> Vec<IterVar> {
        row_dims
            .iter()
            .map(|&d| te::reduce_axis(&format!("r{d}"), xs[d] as i64))
            .collect()
    };
    let exprs = |v: &[IterVar]| -> Vec<Expr> { v.iter().map(IterVar::expr).collect() };
    let stat_index = |s: &[Expr]| -> Vec<Expr> {
        if outer.is_empty() {
            Vec::new()
        } else {
            s.to_vec()
        }
    };
    match row_op {
        RowsOp::Softmax(_) => {
            let r = reduce_axes();
            let refs: Vec<&IterVar> = r.iter().collect();
            let max = te::compute("row_max", &stat_axes, |s| {
                te::max(x_at(&stat_index(s), &exprs(&r)), &refs)
            });
            let f_max = stage(&format!("{name}_max"), vals, &max, &[])?;
            let r = reduce_axes();
            let refs: Vec<&IterVar> = r.iter().collect();
            let sum = te::compute("row_sum", &stat_axes, |s| {
                let v = x_at(&stat_index(s), &exprs(&r)) - max.at(s);
                te::sum(te::exp(v), &refs)
            });
            let f_sum = stage(&format!("{name}_sum"), vals, &sum, &[&max])?;
            let (max_read, sum_read) = (max.clone(), sum.clone());
            vals.set_root_reading(
                node.output,
                Box::new(move |v: &Values, ix: &[Expr]| {
                    let s = stat_of(ix);
                    te::exp(v.at(x, ix) - max_read.at(&s)) / sum_read.at(&s)
                }),
            );
            let out = output(vals);
            let f_out = rules::injective(name, &inputs(vals, &[&max, &sum]), &out)
                .map_err(LowerError::Kernels)?;
            Ok((
                chain(name, vec![f_max, f_sum, f_out], &[max, sum]),
                format!(
                    "rule: softmax over rows of {n}, max and sum one thread per row, then one thread per element"
                ),
            ))
        }
        RowsOp::LayerNorm(&LayerNorm {
            epsilon, rms: true, ..
        }) => {
            let inv_n = (1.0 / n as f64) as f32;
            let r = reduce_axes();
            let refs: Vec<&IterVar> = r.iter().collect();
            let sq = te::compute("row_sq", &stat_axes, |s| {
                let v = x_at(&stat_index(s), &exprs(&r));
                te::sum(v.clone() * v * inv_n, &refs)
            });
            let f_sq = stage(&format!("{name}_sq"), vals, &sq, &[])?;
            let sq_read = sq.clone();
            let scale = node.inputs[1];
            let bias = node.inputs.get(2).copied();
            let params_at = move |v: &Values, t: TensorId, ix: &[Expr]| -> Expr {
                let normalized: Vec<Expr> = row_dims.iter().map(|&d| ix[d].clone()).collect();
                v.at(t, &broadcast_index(&g.tensor(t).shape, &normalized))
            };
            vals.set_root_reading(
                node.output,
                Box::new(move |v: &Values, ix: &[Expr]| {
                    let k = te::rsqrt(sq_read.at(&stat_of(ix)) + epsilon as f32);
                    let y = v.at(x, ix) * k * params_at(v, scale, ix);
                    match bias {
                        Some(b) => y + params_at(v, b, ix),
                        None => y,
                    }
                }),
            );
            let out = output(vals);
            let f_out =
                rules::injective(name, &inputs(vals, &[&sq]), &out).map_err(LowerError::Kernels)?;
            Ok((
                chain(name, vec![f_sq, f_out], &[sq]),
                format!(
                    "rule: RMS norm over rows of {n}, mean square one thread per row, then one thread per element"
                ),
            ))
        }
        RowsOp::LayerNorm(&LayerNorm { epsilon, .. }) => {
            let inv_n = (1.0 / n as f64) as f32;
            let r = reduce_axes();
            let refs: Vec<&IterVar> = r.iter().collect();
            let mean = te::compute("row_mean", &stat_axes, |s| {
                te::sum(x_at(&stat_index(s), &exprs(&r)) * inv_n, &refs)
            });
            let f_mean = stage(&format!("{name}_mean"), vals, &mean, &[])?;
            let r = reduce_axes();
            let refs: Vec<&IterVar> = r.iter().collect();
            // Two passes (mean, then the mean square of the difference): no
            // cancellation where the mean is large against the spread.
            let var = te::compute("row_var", &stat_axes, |s| {
                let d = x_at(&stat_index(s), &exprs(&r)) - mean.at(s);
                te::sum(d.clone() * d * inv_n, &refs)
            });
            let f_var = stage(&format!("{name}_var"), vals, &var, &[&mean])?;
            let (mean_read, var_read) = (mean.clone(), var.clone());
            let (scale, bias) = (node.inputs[1], node.inputs.get(2).copied());
            let params_at = move |v: &Values, t: TensorId, ix: &[Expr]| -> Expr {
                let normalized: Vec<Expr> = row_dims.iter().map(|&d| ix[d].clone()).collect();
                v.at(t, &broadcast_index(&g.tensor(t).shape, &normalized))
            };
            vals.set_root_reading(
                node.output,
                Box::new(move |v: &Values, ix: &[Expr]| {
                    let s = stat_of(ix);
                    let k = te::rsqrt(var_read.at(&s) + epsilon as f32);
                    let y = (v.at(x, ix) - mean_read.at(&s)) * k * params_at(v, scale, ix);
                    match bias {
                        Some(b) => y + params_at(v, b, ix),
                        None => y,
                    }
                }),
            );
            let out = output(vals);
            let f_out = rules::injective(name, &inputs(vals, &[&mean, &var]), &out)
                .map_err(LowerError::Kernels)?;
            Ok((
                chain(name, vec![f_mean, f_var, f_out], &[mean, var]),
                format!(
                    "rule: layer norm over rows of {n}, mean and variance one thread per row, then one thread per element"
                ),
            ))
        }
    }
}

/// The group's buffers read so far, then `temps`.
pub(super) fn inputs(vals: &Values, temps: &[&Buffer]) -> Vec<Buffer> {
    let mut v: Vec<Buffer> = vals.buffers().into_iter().map(|(_, b)| b).collect();
    v.extend(temps.iter().map(|&b| b.clone()));
    v
}

/// One statistic per row by the reduction rule, reading the earlier statistics `deps`
/// as inputs (not recomputing them).
fn stage(name: &str, vals: &Values, stat: &Buffer, deps: &[&Buffer]) -> Result<Func, LowerError> {
    rules::reduction(name, &inputs(vals, deps), stat, stat).map_err(LowerError::Kernels)
}

/// One function running `parts` in order, each part's output (but the last's) a global
/// temporary read by the parts after it. Joined from the back, so that each join's
/// second function holds every reader of its temporary.
pub(super) fn chain(name: &str, mut parts: Vec<Func>, temps: &[Buffer]) -> Func {
    let last = parts.pop().expect("a chain has parts");
    parts
        .into_iter()
        .zip(temps)
        .rev()
        .fold(last, |rest, (part, temp)| join(name, part, rest, temp))
}
