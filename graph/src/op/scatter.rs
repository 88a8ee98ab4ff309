//! The scatters: [`ScatterElements`] (`out = data`, then for each position `i` of
//! `indices`, `out[i with i[axis] replaced by indices[i]] ⊕= updates[i]`) and
//! [`ScatterNd`] (ONNX's ScatterND: `indices` `[..., q]` addresses slices of the first
//! `q` dimensions of `data`, each replaced by — or combined with — a slice of
//! `updates`). `⊕` is a replacement (`reduction=none`) or an addition, product, maximum
//! or minimum; updates apply in the row-major order of `indices`, so that where two
//! address one element, the later one wins (ONNX Runtime's order). Negative indices
//! count from the end. An index out of range is an error, as for the gathers
//! (`gather.rs`, [`crate::indices`]): constant indices are refused here, computed ones
//! are clamped by the kernels (no write leaves the tensor) and fail the run through the
//! model compiler's guard.
//!
//! Both are injective: an output element is `data`'s, then every update is checked in
//! order for whether it lands there — a chain of selects as long as the number of
//! updates that may land on one element (the axis of `indices`, or its index tuples),
//! which weft takes up to [`MAX_UPDATES`]: the few rows exporters scatter into (a
//! cache's slots, a mask's entries). The indices may be computed.

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::gather::constant_in_range;
use super::inline::clamped_index;
use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, axis_of, integer};
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// The most updates that may land on one element that weft scatters.
pub const MAX_UPDATES: usize = 256;

/// How an update combines with the element it lands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterReduction {
    /// It replaces it.
    None,
    Add,
    Mul,
    Max,
    Min,
}

impl ScatterReduction {
    /// ONNX's `reduction` string.
    pub fn name(self) -> &'static str {
        match self {
            ScatterReduction::None => "none",
            ScatterReduction::Add => "add",
            ScatterReduction::Mul => "mul",
            ScatterReduction::Max => "max",
            ScatterReduction::Min => "min",
        }
    }

    fn apply(self, old: f64, new: f64) -> f64 {
        match self {
            ScatterReduction::None => new,
            ScatterReduction::Add => old + new,
            ScatterReduction::Mul => old * new,
            ScatterReduction::Max => old.max(new),
            ScatterReduction::Min => old.min(new),
        }
    }

    fn expr(self, old: Expr, new: Expr) -> Expr {
        match self {
            ScatterReduction::None => new,
            ScatterReduction::Add => old + new,
            ScatterReduction::Mul => old * new,
            ScatterReduction::Max => te::maximum(old, new),
            ScatterReduction::Min => te::minimum(old, new),
        }
    }
}

/// ONNX's ScatterElements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScatterElements {
    pub axis: usize,
    pub reduction: ScatterReduction,
}

/// ONNX's ScatterND.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScatterNd {
    pub reduction: ScatterReduction,
}

/// The inputs' common checks: `data`'s type for `updates`, integer `indices`.
fn check_types(inputs: &[&Tensor]) -> Result<(), String> {
    arity(inputs, 3, 3)?;
    integer(inputs[1], 1)?;
    let (data, updates) = (inputs[0], inputs[2]);
    if updates.dtype != data.dtype {
        return Err(format!(
            "input 2 `{}` is {}, data `{}` is {}",
            updates.name, updates.dtype, data.name, data.dtype
        ));
    }
    Ok(())
}

/// An index value (negative: from the end) clamped into `[0, n)`: the graph's evaluator
/// refuses an index out of range before it calls the op ([`crate::indices`]), so the
/// clamp only keeps a direct call in bounds.
fn index(v: f64, n: usize) -> usize {
    let n = n as i64;
    let mut i = v as i64;
    if i < 0 {
        i += n;
    }
    i.clamp(0, n - 1) as usize
}

/// Every index of `shape`, row-major.
fn positions(shape: &[usize]) -> Vec<Vec<usize>> {
    let total: usize = shape.iter().product();
    (0..total)
        .map(|mut k| {
            let mut ix = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                ix[d] = k % shape[d];
                k /= shape[d];
            }
            ix
        })
        .collect()
}

impl OpDef for ScatterElements {
    fn name(&self) -> &'static str {
        "ScatterElements"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(axis={}, reduction={})",
            self.axis,
            self.reduction.name()
        )
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        check_types(inputs)?;
        let (data, idx, updates) = (inputs[0], inputs[1], inputs[2]);
        axis_of(self.axis, data)?;
        let fits = idx.shape.len() == data.shape.len()
            && (0..data.shape.len()).all(|d| d == self.axis || idx.shape[d] <= data.shape[d]);
        if !fits || updates.shape != idx.shape {
            return Err(format!(
                "indices `{}` {:?} must have the rank of data {:?}, no larger dimension but the axis, and the shape of updates {:?}",
                idx.name, idx.shape, data.shape, updates.shape
            ));
        }
        constant_in_range(idx, &[data.shape[self.axis]])?;
        if idx.shape[self.axis] > MAX_UPDATES {
            return Err(format!(
                "indices `{}` {:?} has {} entries along axis {}: weft scatters at most {MAX_UPDATES} onto one element",
                idx.name, idx.shape, idx.shape[self.axis], self.axis
            ));
        }
        Ok((data.shape.clone(), data.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let (data, idx, updates) = (x[0], x[1], x[2]);
        let n = data.shape()[self.axis];
        let mut out = data.clone();
        for at in positions(idx.shape()) {
            let mut to = at.clone();
            to[self.axis] = index(idx[IxDyn(&at)], n);
            let old = out[IxDyn(&to)];
            out[IxDyn(&to)] = self.reduction.apply(old, updates[IxDyn(&at)]);
        }
        out
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let data = &x.input_tensor(0).shape;
        let ishape = &x.input_tensor(1).shape;
        let axis = self.axis;
        // Only output elements within `indices`' extent (off the axis) receive updates.
        let within: Vec<Expr> = (0..data.len())
            .filter(|&d| d != axis && ishape[d] < data[d])
            .map(|d| idx[d].clone().lt(ishape[d] as i64))
            .collect();
        let mut v = x.input(0, idx);
        for u in 0..ishape[axis] {
            let at: Vec<Expr> = (0..data.len())
                .map(|d| {
                    if d == axis {
                        Expr::int(u as i64)
                    } else if ishape[d] < data[d] {
                        idx[d].clone().min(ishape[d] as i64 - 1)
                    } else {
                        idx[d].clone()
                    }
                })
                .collect();
            let target = clamped_index(x.input(1, &at), data[axis]);
            let mut hit = vec![target.eq_(idx[axis].clone())];
            hit.extend(within.iter().cloned());
            let new = self.reduction.expr(v.clone(), x.input(2, &at));
            v = te::if_then_else(Expr::all(hit), new, v);
        }
        Some(v)
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("axis", self.axis as i64);
        export_reduction(node, self.reduction);
        Ok(())
    }

    fn macs(&self, inputs: &[&Tensor], output: &Tensor) -> f64 {
        (output.numel() * inputs[1].shape[self.axis].max(1)) as f64
    }

    fn index_use(&self, input: usize, inputs: &[&Tensor]) -> IndexUse {
        if input == 1 {
            IndexUse::Rows(inputs[0].shape[self.axis])
        } else {
            IndexUse::Data
        }
    }
}

impl OpDef for ScatterNd {
    fn name(&self) -> &'static str {
        "ScatterND"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(reduction={})", self.reduction.name())
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        check_types(inputs)?;
        let (data, idx, updates) = (inputs[0], inputs[1], inputs[2]);
        let q = idx.shape.last().copied().unwrap_or(0);
        if idx.shape.is_empty() || q == 0 || q > data.shape.len() {
            return Err(format!(
                "indices `{}` {:?} must end in a dimension of 1 to {} (the rank of data)",
                idx.name,
                idx.shape,
                data.shape.len()
            ));
        }
        constant_in_range(idx, &data.shape[..q])?;
        let lead = &idx.shape[..idx.shape.len() - 1];
        let mut want = lead.to_vec();
        want.extend(&data.shape[q..]);
        if updates.shape != want {
            return Err(format!(
                "updates `{}` {:?} must have the shape {want:?} (indices {:?} on data {:?})",
                updates.name, updates.shape, idx.shape, data.shape
            ));
        }
        let count: usize = lead.iter().product();
        if count > MAX_UPDATES {
            return Err(format!(
                "indices `{}` {:?} hold {count} index tuples: weft scatters at most {MAX_UPDATES}",
                idx.name, idx.shape
            ));
        }
        Ok((data.shape.clone(), data.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let (data, idx, updates) = (x[0], x[1], x[2]);
        let r = idx.ndim();
        let q = idx.shape()[r - 1];
        let mut out = data.clone();
        for lead in positions(&idx.shape()[..r - 1]) {
            let prefix: Vec<usize> = (0..q)
                .map(|j| {
                    let mut at = lead.clone();
                    at.push(j);
                    index(idx[IxDyn(&at)], data.shape()[j])
                })
                .collect();
            for rest in positions(&data.shape()[q..]) {
                let to: Vec<usize> = prefix.iter().chain(&rest).copied().collect();
                let from: Vec<usize> = lead.iter().chain(&rest).copied().collect();
                let old = out[IxDyn(&to)];
                out[IxDyn(&to)] = self.reduction.apply(old, updates[IxDyn(&from)]);
            }
        }
        out
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let data = &x.input_tensor(0).shape;
        let ishape = &x.input_tensor(1).shape;
        let r = ishape.len();
        let q = ishape[r - 1];
        let mut v = x.input(0, idx);
        for lead in positions(&ishape[..r - 1]) {
            let lead: Vec<Expr> = lead.iter().map(|&i| Expr::int(i as i64)).collect();
            let hit: Vec<Expr> = (0..q)
                .map(|j| {
                    let mut at = lead.clone();
                    at.push(Expr::int(j as i64));
                    clamped_index(x.input(1, &at), data[j]).eq_(idx[j].clone())
                })
                .collect();
            let mut from = lead;
            from.extend_from_slice(&idx[q..]);
            let new = self.reduction.expr(v.clone(), x.input(2, &from));
            v = te::if_then_else(Expr::all(hit), new, v);
        }
        Some(v)
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        export_reduction(node, self.reduction);
        Ok(())
    }

    fn macs(&self, inputs: &[&Tensor], output: &Tensor) -> f64 {
        let ishape = &inputs[1].shape;
        let count: usize = ishape[..ishape.len() - 1].iter().product();
        (output.numel() * count.max(1)) as f64
    }

    fn index_use(&self, input: usize, inputs: &[&Tensor]) -> IndexUse {
        if input == 1 {
            IndexUse::Tuples {
                fewest: inputs[0].shape.iter().copied().min().unwrap_or(1),
            }
        } else {
            IndexUse::Data
        }
    }
}

/// `reduction` where it is not the default, with the opset that has it.
fn export_reduction(node: &mut ExportNode<'_>, reduction: ScatterReduction) {
    match reduction {
        ScatterReduction::None => {}
        ScatterReduction::Add | ScatterReduction::Mul => {
            node.string("reduction", reduction.name());
            node.needs_opset(16);
        }
        ScatterReduction::Max | ScatterReduction::Min => {
            node.string("reduction", reduction.name());
            node.needs_opset(18);
        }
    }
}

/// ONNX's scatters (`reduction` add and mul from opset 16, max and min from 18), and
/// `Scatter` (opsets 9 and 10; deprecated from 11 for ScatterElements, the same op).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Scatter", &[9, 11], |n| import(n, true)),
    OnnxOp::new("ScatterElements", &[11, 13, 16, 18], |n| import(n, true)),
    OnnxOp::new("ScatterND", &[11, 13, 16, 18], |n| import(n, false)),
];

fn import(n: &mut dyn OnnxNode, elements: bool) -> Result<(), OnnxError> {
    let opset = n.opset();
    let reduction = match n.string("reduction", "none")?.as_str() {
        "none" => ScatterReduction::None,
        "add" if opset >= 16 => ScatterReduction::Add,
        "mul" if opset >= 16 => ScatterReduction::Mul,
        "max" if opset >= 18 => ScatterReduction::Max,
        "min" if opset >= 18 => ScatterReduction::Min,
        other => {
            return Err(n.attr_err(
                "reduction",
                format!(
                    "`{other}` at opset {opset}: ONNX has none, add and mul from opset 16, max and min from 18"
                ),
            ));
        }
    };
    let inputs = vec![n.data(0)?, n.data(1)?, n.data(2)?];
    let op = if elements {
        let r = n.shape(inputs[0]).len();
        let axis = n.int("axis", 0)?;
        let axis = n.axis("axis", axis, r, false)?;
        Op::ScatterElements(ScatterElements { axis, reduction })
    } else {
        Op::ScatterNd(ScatterNd { reduction })
    };
    n.emit(op, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(shape: &[usize], v: &[f64]) -> ArrayD<f64> {
        ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap()
    }

    #[test]
    fn later_updates_win_or_combine() {
        let data = arr(&[1, 5], &[1., 2., 3., 4., 5.]);
        let idx = arr(&[1, 3], &[1., -1., 1.]);
        let upd = arr(&[1, 3], &[10., 20., 30.]);
        let none = ScatterElements {
            axis: 1,
            reduction: ScatterReduction::None,
        };
        let got = none.reference(&[&data, &idx, &upd]);
        assert_eq!(
            got.iter().copied().collect::<Vec<_>>(),
            [1., 30., 3., 4., 20.]
        );
        let add = ScatterElements {
            axis: 1,
            reduction: ScatterReduction::Add,
        };
        let got = add.reference(&[&data, &idx, &upd]);
        assert_eq!(
            got.iter().copied().collect::<Vec<_>>(),
            [1., 42., 3., 4., 25.]
        );
    }

    #[test]
    fn nd_scatters_slices() {
        let data = arr(&[3, 2], &[0.; 6]);
        let idx = arr(&[2, 1], &[2., 0.]);
        let upd = arr(&[2, 2], &[1., 2., 3., 4.]);
        let got = ScatterNd {
            reduction: ScatterReduction::None,
        }
        .reference(&[&data, &idx, &upd]);
        assert_eq!(
            got.iter().copied().collect::<Vec<_>>(),
            [3., 4., 0., 0., 1., 2.]
        );
    }
}
