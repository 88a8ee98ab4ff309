//! The float64 reference of the index maps and row reductions (see [`crate::reference`]).
//!
//! Integer and bool tensors are float64 here too (exact to 2⁵³). An index out of range
//! is clamped to the nearest valid one, as weft's kernels clamp it to stay in bounds:
//! the reference and the kernels agree on every input, and neither reads outside a
//! tensor.

use ndarray::{ArrayD, Axis, Dimension, IxDyn, Zip};
use weft_ir::dtype::DType;

use crate::infer::broadcast;
use crate::op::{Op, ReduceKind};

/// One index-map or row-reduction op on float64 values whose shapes inference accepted.
pub(crate) fn apply(op: &Op, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
    match op {
        Op::Transpose { perm } => x[0]
            .view()
            .permuted_axes(IxDyn(perm))
            .as_standard_layout()
            .into_owned(),
        Op::Slice { starts, steps, .. } => {
            let sizes = slice_sizes(op);
            ArrayD::from_shape_fn(IxDyn(&sizes), |ix| {
                let at: Vec<usize> = (0..sizes.len())
                    .map(|d| (starts[d] as i64 + ix[d] as i64 * steps[d]) as usize)
                    .collect();
                x[0][IxDyn(&at)]
            })
        }
        Op::Expand { shape } => x[0]
            .broadcast(IxDyn(shape))
            .expect("checked by inference")
            .to_owned(),
        Op::Where => {
            let xy = broadcast(x[1].shape(), x[2].shape()).expect("checked by inference");
            let shape = broadcast(x[0].shape(), &xy).expect("checked by inference");
            let view = |a: &ArrayD<f64>| a.broadcast(IxDyn(&shape)).expect("checked").to_owned();
            let (c, a, b) = (view(x[0]), view(x[1]), view(x[2]));
            let mut out = ArrayD::zeros(IxDyn(&shape));
            Zip::from(&mut out)
                .and(&c)
                .and(&a)
                .and(&b)
                .for_each(|o, &c, &a, &b| *o = if c != 0.0 { a } else { b });
            out
        }
        Op::IsNaN => x[0].mapv(|v| if v.is_nan() { 1.0 } else { 0.0 }),
        Op::Cast { to } => x[0].mapv(|v| cast(v, *to)),
        Op::Gather { axis } => {
            let (data, idx) = (x[0], x[1]);
            let n = data.shape()[*axis];
            let mut shape = data.shape()[..*axis].to_vec();
            shape.extend(idx.shape());
            shape.extend(&data.shape()[axis + 1..]);
            let q = idx.ndim();
            ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
                let i = index(idx[IxDyn(&ix.slice()[*axis..*axis + q])], n);
                let mut at = ix.slice()[..*axis].to_vec();
                at.push(i);
                at.extend(&ix.slice()[*axis + q..]);
                data[IxDyn(&at)]
            })
        }
        Op::GatherElements { axis } => {
            let (data, idx) = (x[0], x[1]);
            let n = data.shape()[*axis];
            ArrayD::from_shape_fn(IxDyn(idx.shape()), |ix| {
                let mut at = ix.slice().to_vec();
                at[*axis] = index(idx[&ix], n);
                data[IxDyn(&at)]
            })
        }
        Op::GatherNd => {
            let (data, idx) = (x[0], x[1]);
            let r = idx.ndim();
            let q = idx.shape()[r - 1];
            let mut shape = idx.shape()[..r - 1].to_vec();
            shape.extend(&data.shape()[q..]);
            ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
                let mut at: Vec<usize> = (0..q)
                    .map(|j| {
                        let mut ii = ix.slice()[..r - 1].to_vec();
                        ii.push(j);
                        index(idx[IxDyn(&ii)], data.shape()[j])
                    })
                    .collect();
                at.extend(&ix.slice()[r - 1..]);
                data[IxDyn(&at)]
            })
        }
        Op::Softmax { axis } => {
            let mut out = x[0].clone();
            for mut lane in out.lanes_mut(Axis(*axis)) {
                let m = lane.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
                lane.mapv_inplace(|v| (v - m).exp());
                let s = lane.sum();
                lane.mapv_inplace(|v| v / s);
            }
            out
        }
        Op::LayerNorm { axis, epsilon } => layer_norm(x, *axis, *epsilon),
        Op::Reduce {
            kind,
            axes,
            keep_dims,
        } => reduce(x[0], *kind, axes, *keep_dims),
        other => unreachable!("{} is not an index map or row reduction", other.name()),
    }
}

/// A Slice's output shape.
fn slice_sizes(op: &Op) -> Vec<usize> {
    match op {
        Op::Slice { sizes, .. } => sizes.clone(),
        _ => Vec::new(),
    }
}

/// An index value (negative: from the end) clamped into `[0, n)`.
fn index(v: f64, n: usize) -> usize {
    let n = n as i64;
    let mut i = v as i64;
    if i < 0 {
        i += n;
    }
    i.clamp(0, n - 1) as usize
}

/// `v` converted to `to` and back to f64.
pub fn cast(v: f64, to: DType) -> f64 {
    match to {
        DType::F32 => v as f32 as f64,
        DType::F16 => f64::from(half::f16::from_f64(v)),
        // Toward zero, saturating (as Rust's and the kernels' conversions do).
        DType::I32 | DType::U32 => {
            if v.is_nan() {
                0.0
            } else {
                v.trunc().clamp(i32::MIN as f64, i32::MAX as f64)
            }
        }
        DType::Bool => {
            if v != 0.0 {
                1.0
            } else {
                0.0
            }
        }
    }
}

fn layer_norm(x: &[&ArrayD<f64>], axis: usize, epsilon: f64) -> ArrayD<f64> {
    let shape = x[0].shape().to_vec();
    let normalized = &shape[axis..];
    let inner: usize = normalized.iter().product();
    let outer: usize = shape[..axis].iter().product();
    let flat = |a: &ArrayD<f64>| -> Vec<f64> {
        a.broadcast(IxDyn(normalized))
            .expect("checked by inference")
            .iter()
            .copied()
            .collect()
    };
    let scale = flat(x[1]);
    let bias = x.get(2).map(|b| flat(b));
    let data: Vec<f64> = x[0].iter().copied().collect();
    let mut out = Vec::with_capacity(data.len());
    for r in 0..outer {
        let row = &data[r * inner..(r + 1) * inner];
        let mean = row.iter().sum::<f64>() / inner as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / inner as f64;
        let k = 1.0 / (var + epsilon).sqrt();
        for (j, v) in row.iter().enumerate() {
            let b = bias.as_ref().map_or(0.0, |b| b[j]);
            out.push((v - mean) * k * scale[j] + b);
        }
    }
    ArrayD::from_shape_vec(IxDyn(&shape), out).expect("same element count")
}

fn reduce(x: &ArrayD<f64>, kind: ReduceKind, axes: &[usize], keep_dims: bool) -> ArrayD<f64> {
    let mut out = x.clone();
    // Highest axis first, so the lower ones keep their numbers; each kept as size 1.
    for &a in axes.iter().rev() {
        let n = out.shape()[a] as f64;
        let r = match kind {
            ReduceKind::Sum => out.sum_axis(Axis(a)),
            ReduceKind::Mean => out.sum_axis(Axis(a)) / n,
            ReduceKind::Max => out.fold_axis(Axis(a), f64::NEG_INFINITY, |m, &v| m.max(v)),
            ReduceKind::Min => out.fold_axis(Axis(a), f64::INFINITY, |m, &v| m.min(v)),
        };
        out = r.insert_axis(Axis(a));
    }
    if keep_dims {
        return out;
    }
    let shape: Vec<usize> = x
        .shape()
        .iter()
        .enumerate()
        .filter(|(d, _)| !axes.contains(d))
        .map(|(_, &n)| n)
        .collect();
    out.into_shape_with_order(IxDyn(&shape))
        .expect("only size-1 axes dropped")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arr(shape: &[usize], v: &[f64]) -> ArrayD<f64> {
        ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap()
    }

    #[test]
    fn index_maps() {
        let x = arr(&[2, 3], &[0., 1., 2., 3., 4., 5.]);
        let t = apply(&Op::Transpose { perm: vec![1, 0] }, &[&x]);
        assert_eq!(
            t.iter().copied().collect::<Vec<_>>(),
            [0., 3., 1., 4., 2., 5.]
        );
        let s = apply(
            &Op::Slice {
                starts: vec![1, 2],
                steps: vec![1, -2],
                sizes: vec![1, 2],
            },
            &[&x],
        );
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [5., 3.]);
        let idx = arr(&[3], &[2., -1., 0.]);
        let g = apply(&Op::Gather { axis: 1 }, &[&x, &idx]);
        assert_eq!(g.shape(), [2, 3]);
        assert_eq!(
            g.iter().copied().collect::<Vec<_>>(),
            [2., 2., 0., 5., 5., 3.]
        );
        let nd = arr(&[2, 2], &[1., 0., 0., 2.]);
        let g = apply(&Op::GatherNd, &[&x, &nd]);
        assert_eq!(g.iter().copied().collect::<Vec<_>>(), [3., 2.]);
        let c = arr(&[2, 1], &[1., 0.]);
        let w = apply(&Op::Where, &[&c, &x, &arr(&[], &[-1.])]);
        assert_eq!(
            w.iter().copied().collect::<Vec<_>>(),
            [0., 1., 2., -1., -1., -1.]
        );
    }

    #[test]
    fn row_reductions() {
        let x = arr(&[2, 2], &[0., 0., 1., 3.]);
        let s = apply(&Op::Softmax { axis: 1 }, &[&x]);
        assert!((s[[0, 0]] - 0.5).abs() < 1e-15);
        assert!((s[[1, 1]] - 1.0 / (1.0 + (-2f64).exp())).abs() < 1e-15);
        let m = reduce(&x, ReduceKind::Mean, &[1], false);
        assert_eq!(m.iter().copied().collect::<Vec<_>>(), [0., 2.]);
        let m = reduce(&x, ReduceKind::Max, &[0, 1], true);
        assert_eq!(m.shape(), [1, 1]);
        let y = arr(&[2, 2], &[0., 2., 1., 3.]);
        let ln = layer_norm(&[&y, &arr(&[2], &[1., 2.])], 1, 0.0);
        assert_eq!(ln.iter().copied().collect::<Vec<_>>(), [-1., 2., -1., 2.]);
    }
}
