//! The same elements in another shape: [`Flatten`] (`[d0, ..., dn]` →
//! `[d0·...·d(axis−1), d(axis)·...·dn]`) and [`Reshape`] (resolved: no `-1` or `0`). They
//! move no element: reading one reads its input at [`reindex`]ed indices.

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::arity;
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// A Flatten's axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flatten {
    pub axis: usize,
}

/// A Reshape's target shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reshape {
    pub shape: Vec<usize>,
}

impl OpDef for Flatten {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        super::symbolic::reshape_carry(x)
    }

    fn name(&self) -> &'static str {
        "Flatten"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(axis={})", self.axis)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let axis = self.axis;
        arity(inputs, 1, 1)?;
        let s = &inputs[0].shape;
        if axis > s.len() {
            return Err(format!("axis {axis} is out of range for rank {}", s.len()));
        }
        let outer: usize = s[..axis].iter().product();
        let inner: usize = s[axis..].iter().product();
        Ok((vec![outer, inner], inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let s = x[0].shape();
        let outer: usize = s[..self.axis].iter().product();
        let inner: usize = s[self.axis..].iter().product();
        reshape(x[0], &[outer, inner])
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Reshape)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        Some(x.input(
            0,
            &reindex(&x.output().shape, &x.input_tensor(0).shape, idx),
        ))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("axis", self.axis as i64);
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Through
    }
}

impl OpDef for Reshape {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        super::symbolic::reshape_carry(x)
    }

    fn name(&self) -> &'static str {
        "Reshape"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(shape={:?})", self.shape)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        let shape = &self.shape;
        arity(inputs, 1, 1)?;
        let n: usize = shape.iter().product();
        if n != inputs[0].numel() {
            return Err(format!(
                "shape {shape:?} holds {n} elements, input `{}` {:?} has {}",
                inputs[0].name,
                inputs[0].shape,
                inputs[0].numel()
            ));
        }
        Ok((shape.clone(), inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        reshape(x[0], &self.shape)
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Reshape)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        Some(x.input(
            0,
            &reindex(&x.output().shape, &x.input_tensor(0).shape, idx),
        ))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.const_ints("shape", self.shape.iter().map(|&d| d as i64).collect());
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Through
    }
}

/// The same elements in `shape`, in row-major order.
fn reshape(x: &ArrayD<f64>, shape: &[usize]) -> ArrayD<f64> {
    let flat: Vec<f64> = x.iter().copied().collect();
    // Inference checked the element count.
    ArrayD::from_shape_vec(IxDyn(shape), flat).expect("element count checked by inference")
}

/// The index into `to` (a shape of as many elements) of the element at `idx` in `from`,
/// both row-major: a reshape's index map.
///
/// The two shapes are cut into the shortest runs of dimensions with equal products
/// (`[1, 7, 32]` and `[1, 7, 2, 16]`: `[1] [7] [32 | 2, 16]`); each run maps on its own,
/// so a split dimension is a sum of strided indices and only a merge divides. That keeps
/// a reshape after an anchor an epilogue post-scheduling fusion can invert.
pub fn reindex(from: &[usize], to: &[usize], idx: &[Expr]) -> Vec<Expr> {
    if from == to {
        return idx.to_vec();
    }
    let mut out = Vec::with_capacity(to.len());
    let (mut i, mut j) = (0, 0);
    while i < from.len() || j < to.len() {
        // The next run: a dimension of each side, then more of whichever side has the
        // smaller product until the two match.
        let (i0, j0) = (i, j);
        let (mut pf, mut pt) = (1usize, 1usize);
        if i < from.len() {
            pf *= from[i];
            i += 1;
        }
        if j < to.len() {
            pt *= to[j];
            j += 1;
        }
        while pf != pt {
            if pf < pt && i < from.len() {
                pf *= from[i];
                i += 1;
            } else if pt < pf && j < to.len() {
                pt *= to[j];
                j += 1;
            } else {
                break;
            }
        }
        if pf != pt {
            // Unreachable for shapes of equal element counts; the flat map is always right.
            return reindex_flat(from, to, idx);
        }
        let mut flat = Expr::int(0);
        for (e, &d) in idx[i0..i].iter().zip(&from[i0..i]) {
            flat = if d == 1 {
                flat
            } else {
                flat * d as i64 + e.clone()
            };
        }
        let mut stride: i64 = pt as i64;
        for (k, &d) in to[j0..j].iter().enumerate() {
            stride /= d.max(1) as i64;
            if d == 1 {
                out.push(Expr::int(0));
                continue;
            }
            let q = if stride == 1 {
                flat.clone()
            } else {
                flat.clone() / stride
            };
            // The run's first dimension needs no modulo: the flat index is below pt.
            let first = to[j0..j0 + k].iter().all(|&x| x == 1);
            out.push(if first { q } else { q % d as i64 });
        }
    }
    out
}

/// `reindex` through one flat index over the whole shape.
fn reindex_flat(from: &[usize], to: &[usize], idx: &[Expr]) -> Vec<Expr> {
    let mut flat = Expr::int(0);
    for (i, &d) in idx.iter().zip(from) {
        flat = flat * d as i64 + i.clone();
    }
    let mut out = Vec::with_capacity(to.len());
    let mut stride: i64 = to.iter().product::<usize>() as i64;
    for (k, &d) in to.iter().enumerate() {
        stride /= d.max(1) as i64;
        let q = if stride == 1 {
            flat.clone()
        } else {
            flat.clone() / stride
        };
        out.push(if k == 0 { q } else { q % d as i64 });
    }
    out
}

/// ONNX's Flatten and Reshape, and Squeeze and Unsqueeze as reshapes.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Flatten", &[1, 9, 11, 13, 21, 23], import_flatten),
    OnnxOp::new("Reshape", &[5, 13, 14, 19, 21, 23], import_reshape),
    OnnxOp::new("Squeeze", &[1, 11, 13, 21, 23], |n| {
        import_squeeze(n, false)
    }),
    OnnxOp::new("Unsqueeze", &[1, 11, 13, 21, 23], |n| {
        import_squeeze(n, true)
    }),
];

fn import_flatten(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let rank = n.shape(x).len();
    let axis = n.int("axis", 1)?;
    let axis = n.axis("axis", axis, rank, true)?;
    n.emit(Op::Flatten(Flatten { axis }), vec![x])
}

fn import_reshape(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let xs = n.shape(x);
    let spec = n
        .constant(1)?
        .ok_or_else(|| n.err("input 1 (the shape) is missing"))?;
    let spec = spec
        .ints()
        .ok_or_else(|| n.err("input 1 (the shape) is not an integer tensor"))?
        .to_vec();
    let allowzero = n.flag("allowzero", false)?;
    let shape = resolve_reshape(&xs, &spec, allowzero).map_err(|w| n.err(w))?;
    n.emit(Op::Reshape(Reshape { shape }), vec![x])
}

/// Squeeze and Unsqueeze: reshapes; `axes` an attribute before opset 13, an input from.
fn import_squeeze(n: &mut dyn OnnxNode, unsqueeze: bool) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let mut dims = n.shape(x);
    let axes = n.ints_moved("axes", 1, 13)?;
    let resolve = |v: i64, r: usize| -> Result<usize, OnnxError> {
        let x = if v < 0 { v + r as i64 } else { v };
        if x < 0 || x >= r as i64 {
            return Err(n.err(format!("axis {v} is out of range for rank {r}")));
        }
        Ok(x as usize)
    };
    if unsqueeze {
        let axes = axes.ok_or_else(|| n.err("the axes are missing"))?;
        let r = dims.len() + axes.len();
        let mut ax = axes
            .iter()
            .map(|&v| resolve(v, r))
            .collect::<Result<Vec<_>, _>>()?;
        ax.sort_unstable();
        for a in ax {
            dims.insert(a, 1);
        }
    } else {
        let r = dims.len();
        let ax: Vec<usize> = match axes {
            Some(v) => v
                .iter()
                .map(|&v| resolve(v, r))
                .collect::<Result<Vec<_>, _>>()?,
            None => (0..r).filter(|&d| dims[d] == 1).collect(),
        };
        if let Some(&d) = ax.iter().find(|&&d| dims[d] != 1) {
            return Err(n.err(format!("dimension {d} of {dims:?} is not 1")));
        }
        dims = (0..r)
            .filter(|d| !ax.contains(d))
            .map(|d| dims[d])
            .collect();
    }
    n.emit(Op::Reshape(Reshape { shape: dims }), vec![x])
}

/// ONNX Reshape's target on an input of `input`: 0 copies the input's dimension (unless
/// `allowzero`), one −1 takes what is left.
pub fn resolve_reshape(
    input: &[usize],
    spec: &[i64],
    allowzero: bool,
) -> Result<Vec<usize>, String> {
    let numel: usize = input.iter().product();
    let mut shape = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &d) in spec.iter().enumerate() {
        shape.push(match d {
            -1 if infer.is_some() => return Err(format!("shape {spec:?} has two -1s")),
            -1 => {
                infer = Some(i);
                1
            }
            0 if !allowzero => *input.get(i).ok_or_else(|| {
                format!(
                    "shape {spec:?} copies dimension {i} of the rank-{} input",
                    input.len()
                )
            })?,
            d if d >= 0 => d as usize,
            d => return Err(format!("shape {spec:?} has the size {d}")),
        });
    }
    let product = |s: &[usize]| s.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    if let Some(i) = infer {
        let known = product(&shape).unwrap_or(0);
        if known == 0 || !numel.is_multiple_of(known) {
            return Err(format!(
                "shape {spec:?} cannot hold the {numel} elements of {input:?}"
            ));
        }
        shape[i] = numel / known;
    }
    if product(&shape) != Some(numel) {
        return Err(format!(
            "shape {spec:?} does not hold the {numel} elements of {input:?}"
        ));
    }
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::resolve_reshape;

    #[test]
    fn reshape_targets() {
        assert_eq!(
            resolve_reshape(&[2, 3, 4], &[0, -1], false),
            Ok(vec![2, 12])
        );
        assert_eq!(resolve_reshape(&[2, 3, 4], &[-1], false), Ok(vec![24]));
        assert_eq!(resolve_reshape(&[2, 0, 4], &[0, 8], true), Ok(vec![0, 8]));
        assert!(resolve_reshape(&[2, 3], &[-1, -1], false).is_err());
        assert!(resolve_reshape(&[2, 3], &[4, -1], false).is_err());
        assert!(resolve_reshape(&[2, 3], &[0, 0, 0], false).is_err());
    }
}
