//! The gathers: [`Gather`] (slices of `data` along `axis` picked by integer `indices`:
//! output `data[..axis] ++ indices ++ data[axis+1..]`), [`GatherElements`]
//! (`out[i] = data[i with i[axis] replaced by indices[i]]`, shaped like `indices`) and
//! [`GatherNd`] (ONNX's GatherND with `batch_dims` 0: `indices` `[..., q]` addresses the
//! first `q` dimensions of `data`; output `indices[..-1] ++ data[q..]`). Negative indices
//! count from the end.
//!
//! Integer tensors are float64 in the reference (exact to 2⁵³). ONNX makes an index out
//! of range an error, and weft never computes one ([`crate::indices`]): constant indices
//! are checked here, when the node is made (its shape inferred); a graph input read as
//! indices before each run ([`crate::inputs::check_indices`]); every index the float64
//! reference meets before the node is evaluated. An index computed on the device is
//! clamped by the kernels (no read leaves the tensor), and a guard the model compiler
//! adds reads it and fails the run (`weft_model::guard`).

mod nd_batch;
mod one_hot;
mod resize;

use std::fmt;

use ndarray::{ArrayD, Dimension, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::inline::clamped_index;
use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, axis_of, integer};
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// A Gather's axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gather {
    pub axis: usize,
}

/// A GatherElements' axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatherElements {
    pub axis: usize,
}

/// ONNX's GatherND with `batch_dims` 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatherNd;

impl OpDef for Gather {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        use super::symbolic::{Carry, SymDim};
        let (axis, rank) = (self.axis, x.inputs[1].shape.len());
        let mut output: Vec<SymDim> = x.dims[1]
            .iter()
            .map(|d| SymDim {
                axis: axis + d.axis,
                inner: d.inner,
            })
            .collect();
        for d in &x.dims[0] {
            if d.axis < axis {
                output.push(*d);
            } else if d.axis > axis {
                output.push(SymDim {
                    axis: d.axis + rank - 1,
                    inner: d.inner,
                });
            } else {
                // Rows picked along the symbol: constant ones below its least value
                // are there at every n (BERT's pooler reads token 0).
                let rows = x.inputs[0].shape[axis] as f64;
                let below_min = x.inputs[1].data.as_ref().is_some_and(|v| {
                    v.iter().all(|&i| {
                        let r = if (i as f64) < 0.0 {
                            i as f64 + rows
                        } else {
                            i as f64
                        };
                        ((r as usize / d.inner) % x.max) < x.min
                    })
                });
                if !below_min {
                    return Carry::Refused(format!(
                        "it picks rows of `{}` along axis {axis}, the symbolic dimension, at indices that are not constants below its least value {}",
                        x.inputs[0].name, x.min
                    ));
                }
            }
        }
        output.sort_by_key(|d| (d.axis, d.inner));
        Carry::Rows(output)
    }

    fn name(&self) -> &'static str {
        "Gather"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(axis={})", self.axis)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let axis = self.axis;
        arity(inputs, 2, 2)?;
        let (data, idx) = (inputs[0], inputs[1]);
        integer(idx, 1)?;
        axis_of(axis, data)?;
        constant_in_range(idx, &[data.shape[axis]])?;
        let mut shape = data.shape[..axis].to_vec();
        shape.extend(&idx.shape);
        shape.extend(&data.shape[axis + 1..]);
        Ok((shape, data.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let axis = self.axis;
        let (data, idx) = (x[0], x[1]);
        let n = data.shape()[axis];
        let mut shape = data.shape()[..axis].to_vec();
        shape.extend(idx.shape());
        shape.extend(&data.shape()[axis + 1..]);
        let q = idx.ndim();
        ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
            let Some(i) = index(idx[IxDyn(&ix.slice()[axis..axis + q])], n) else {
                return f64::NAN;
            };
            let mut at = ix.slice()[..axis].to_vec();
            at.push(i);
            at.extend(&ix.slice()[axis + q..]);
            data[IxDyn(&at)]
        })
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let axis = self.axis;
        let data = &x.input_tensor(0).shape;
        let q = x.input_tensor(1).shape.len();
        let i = clamped_index(x.input(1, &idx[axis..axis + q]), data[axis]);
        let mut at = idx[..axis].to_vec();
        at.push(i);
        at.extend_from_slice(&idx[axis + q..]);
        Some(x.input(0, &at))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("axis", self.axis as i64);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, input: usize, inputs: &[&Tensor]) -> IndexUse {
        if input == 1 {
            IndexUse::Rows(inputs[0].shape[self.axis])
        } else {
            IndexUse::Data
        }
    }
}

impl OpDef for GatherElements {
    fn name(&self) -> &'static str {
        "GatherElements"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(axis={})", self.axis)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let axis = self.axis;
        arity(inputs, 2, 2)?;
        let (data, idx) = (inputs[0], inputs[1]);
        integer(idx, 1)?;
        axis_of(axis, data)?;
        let fits = idx.shape.len() == data.shape.len()
            && (0..data.shape.len()).all(|d| d == axis || idx.shape[d] <= data.shape[d]);
        if !fits {
            return Err(format!(
                "indices `{}` {:?} must have the rank of data {:?} and no larger dimension but the axis",
                idx.name, idx.shape, data.shape
            ));
        }
        constant_in_range(idx, &[data.shape[axis]])?;
        Ok((idx.shape.clone(), data.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let (data, idx) = (x[0], x[1]);
        let n = data.shape()[self.axis];
        ArrayD::from_shape_fn(IxDyn(idx.shape()), |ix| {
            let mut at = ix.slice().to_vec();
            let Some(i) = index(idx[&ix], n) else {
                return f64::NAN;
            };
            at[self.axis] = i;
            data[IxDyn(&at)]
        })
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let n = x.input_tensor(0).shape[self.axis];
        let mut at = idx.to_vec();
        at[self.axis] = clamped_index(x.input(1, idx), n);
        Some(x.input(0, &at))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("axis", self.axis as i64);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, input: usize, inputs: &[&Tensor]) -> IndexUse {
        if input == 1 {
            IndexUse::Rows(inputs[0].shape[self.axis])
        } else {
            IndexUse::Data
        }
    }
}

impl OpDef for GatherNd {
    fn name(&self) -> &'static str {
        "GatherND"
    }

    fn fmt_attrs(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 2, 2)?;
        let (data, idx) = (inputs[0], inputs[1]);
        integer(idx, 1)?;
        let q = idx.shape.last().copied().unwrap_or(0);
        if idx.shape.is_empty() || q == 0 || q > data.shape.len() {
            return Err(format!(
                "indices `{}` {:?} must end in a dimension of 1 to {} (the rank of data)",
                idx.name,
                idx.shape,
                data.shape.len()
            ));
        }
        // Element `i` of the indices addresses dimension `i % q` of data.
        constant_in_range(idx, &data.shape[..q])?;
        let mut shape = idx.shape[..idx.shape.len() - 1].to_vec();
        shape.extend(&data.shape[q..]);
        Ok((shape, data.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let (data, idx) = (x[0], x[1]);
        let r = idx.ndim();
        let q = idx.shape()[r - 1];
        let mut shape = idx.shape()[..r - 1].to_vec();
        shape.extend(&data.shape()[q..]);
        ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
            let at: Option<Vec<usize>> = (0..q)
                .map(|j| {
                    let mut ii = ix.slice()[..r - 1].to_vec();
                    ii.push(j);
                    index(idx[IxDyn(&ii)], data.shape()[j])
                })
                .collect();
            let Some(mut at) = at else {
                return f64::NAN;
            };
            at.extend(&ix.slice()[r - 1..]);
            data[IxDyn(&at)]
        })
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let data = &x.input_tensor(0).shape;
        let indices = &x.input_tensor(1).shape;
        let r = indices.len();
        let q = indices[r - 1];
        let mut at: Vec<Expr> = (0..q)
            .map(|j| {
                let mut ii = idx[..r - 1].to_vec();
                ii.push(Expr::int(j as i64));
                clamped_index(x.input(1, &ii), data[j])
            })
            .collect();
        at.extend_from_slice(&idx[r - 1..]);
        Some(x.input(0, &at))
    }

    fn export(&self, _: &mut ExportNode<'_>) -> Result<(), String> {
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
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

/// Where `idx` is a constant, checks every index against ONNX's range `[-n, n)`: `rows`
/// holds one `n` for every element, or one per position of the last axis
/// ([`first_outside`]). An index out of range is an error, never clamped.
pub(super) fn constant_in_range(idx: &Tensor, rows: &[usize]) -> Result<(), String> {
    let Some(values) = &idx.data else {
        return Ok(());
    };
    match first_outside(values.iter().map(|&v| f64::from(v)), rows) {
        None => Ok(()),
        Some((i, v, n)) => Err(format!(
            "index {v} (element {i} of the constant indices `{}`) is out of range for {n} rows: ONNX allows {} to {}",
            idx.name,
            -(n as i64),
            n as i64 - 1
        )),
    }
}

/// The first of `values` (row-major) outside ONNX's range: its element number, its
/// value and the rows it indexes. Element `i` is bounded by `rows[i % rows.len()]`.
pub fn first_outside(
    values: impl IntoIterator<Item = f64>,
    rows: &[usize],
) -> Option<(usize, f64, usize)> {
    if rows.is_empty() {
        return None;
    }
    values.into_iter().enumerate().find_map(|(i, v)| {
        let n = rows[i % rows.len()];
        let b = n as f64;
        // NaN is in no range.
        (!(v >= -b && v < b)).then_some((i, v, n))
    })
}

/// An index value (negative: from the end) as a position in `[0, n)`; `None` out of
/// ONNX's range `[-n, n)`, where an op's reference gives NaN (the graph's evaluator
/// refuses such an index before it calls the op: [`crate::indices`]).
fn index(v: f64, n: usize) -> Option<usize> {
    let n = n as f64;
    // `[-n, n)`: NaN is in no range.
    (v >= -n && v < n).then_some((if v < 0.0 { v + n } else { v }) as usize)
}

/// ONNX's gathers, Resize and Upsample as gathers at constant indices
/// (`gather/resize.rs`), OneHot and EyeLike (`gather/one_hot.rs`), and GatherND's
/// `batch_dims` (`gather/nd_batch.rs`).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Gather", &[1, 11, 13], |n| import_gather(n, false)),
    OnnxOp::new("GatherElements", &[11, 13], |n| import_gather(n, true)),
    OnnxOp::new("EyeLike", &[9, 22], one_hot::import_eye_like),
    OnnxOp::new("GatherND", &[11, 12, 13], import_gather_nd),
    OnnxOp::new("OneHot", &[9, 11], one_hot::import_one_hot),
    OnnxOp::new("Resize", &[11, 13, 18, 19], resize::import_resize),
    OnnxOp::new("Upsample", &[9], resize::import_upsample),
];

fn import_gather(n: &mut dyn OnnxNode, elements: bool) -> Result<(), OnnxError> {
    let data = n.data(0)?;
    let idx = n.data(1)?;
    let r = n.shape(data).len();
    let axis = n.int("axis", 0)?;
    let axis = n.axis("axis", axis, r, false)?;
    let op = if elements {
        Op::GatherElements(GatherElements { axis })
    } else {
        Op::Gather(Gather { axis })
    };
    n.emit(op, vec![data, idx])
}

fn import_gather_nd(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let batch_dims = n.int("batch_dims", 0)?;
    let (data, idx) = (n.data(0)?, n.data(1)?);
    if batch_dims == 0 {
        return n.emit(Op::GatherNd, vec![data, idx]);
    }
    nd_batch::import(n, data, idx, batch_dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(shape: &[usize], v: &[f64]) -> ArrayD<f64> {
        ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap()
    }

    #[test]
    fn gathers_count_from_the_end() {
        let x = arr(&[2, 3], &[0., 1., 2., 3., 4., 5.]);
        let idx = arr(&[3], &[2., -1., 0.]);
        let g = Gather { axis: 1 }.reference(&[&x, &idx]);
        assert_eq!(g.shape(), [2, 3]);
        assert_eq!(
            g.iter().copied().collect::<Vec<_>>(),
            [2., 2., 0., 5., 5., 3.]
        );
        let nd = arr(&[2, 2], &[1., 0., 0., 2.]);
        let g = GatherNd.reference(&[&x, &nd]);
        assert_eq!(g.iter().copied().collect::<Vec<_>>(), [3., 2.]);
    }
}
