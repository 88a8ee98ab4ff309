//! The float64 reference: every op of a graph evaluated in `f64` with ndarray, one node
//! after another, independent of every schedule, template and device. `weft model run`
//! checks against it where the input is small enough, and the tests check weft's
//! kernels and ONNX Runtime against it.
//!
//! Convolutions are lowered to a matrix product per group (im2col then ndarray's `dot`),
//! so a ResNet-50 at 224² takes seconds, not minutes.

use std::collections::HashMap;

use ndarray::{Array2, Array4, ArrayD, Axis, IxDyn, Zip, s};

use crate::graph::{Graph, GraphError, TensorId};
use crate::op::{Conv, Gemm, Op, Pool, PoolKind};

/// The graph's outputs for `inputs` (one per graph input, in order), in float64.
pub fn evaluate(graph: &Graph, inputs: &[ArrayD<f64>]) -> Result<Vec<ArrayD<f64>>, GraphError> {
    let values = evaluate_all(graph, inputs)?;
    Ok(graph.outputs.iter().map(|o| values[o].clone()).collect())
}

/// Every tensor's value (inputs, weights and every node's output), for looking inside.
pub fn evaluate_all(
    graph: &Graph,
    inputs: &[ArrayD<f64>],
) -> Result<HashMap<TensorId, ArrayD<f64>>, GraphError> {
    graph.validate()?;
    if inputs.len() != graph.inputs.len() {
        return Err(GraphError::Input {
            name: graph.name.clone(),
            what: format!(
                "the graph takes {} inputs, {} were given",
                graph.inputs.len(),
                inputs.len()
            ),
        });
    }
    let mut values: HashMap<TensorId, ArrayD<f64>> = HashMap::new();
    for (&id, x) in graph.inputs.iter().zip(inputs) {
        let t = graph.tensor(id);
        if x.shape() != t.shape.as_slice() {
            return Err(GraphError::Input {
                name: t.name.clone(),
                what: format!("shape {:?} given, the graph takes {:?}", x.shape(), t.shape),
            });
        }
        values.insert(id, x.clone());
    }
    for (i, t) in graph.tensors.iter().enumerate() {
        if let Some(data) = &t.data {
            values.insert(TensorId(i), data.mapv(f64::from));
        }
    }
    for node in &graph.nodes {
        let ins: Vec<&ArrayD<f64>> = node.inputs.iter().map(|i| &values[i]).collect();
        let out = apply(&node.op, &ins);
        debug_assert_eq!(out.shape(), graph.tensor(node.output).shape.as_slice());
        values.insert(node.output, out);
    }
    Ok(values)
}

/// One op on float64 values whose shapes inference has already accepted.
pub fn apply(op: &Op, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
    match op {
        Op::Conv(c) => conv(c, x[0], x[1], x.get(2).copied()),
        Op::BatchNorm { epsilon } => {
            let c = x[0].shape()[1];
            let mut out = x[0].clone();
            for ch in 0..c {
                let (scale, bias, mean, var) = (x[1][[ch]], x[2][[ch]], x[3][[ch]], x[4][[ch]]);
                let k = scale / (var + epsilon).sqrt();
                out.index_axis_mut(Axis(1), ch)
                    .mapv_inplace(|v| (v - mean) * k + bias);
            }
            out
        }
        Op::Unary(u) => x[0].mapv(|v| u.apply(v)),
        Op::Clip { min, max } => x[0].mapv(|v| v.max(*min).min(*max)),
        Op::Binary(b) => broadcast_with(x[0], x[1], |p, q| b.apply(p, q)),
        Op::Pool(p) => pool(p, x[0]),
        Op::GlobalPool(kind) => {
            let s = x[0].shape();
            let (n, c) = (s[0], s[1]);
            let mut out = ArrayD::zeros(IxDyn(&[n, c, 1, 1]));
            for b in 0..n {
                for ch in 0..c {
                    let plane = x[0].slice(s![b, ch, .., ..]);
                    out[[b, ch, 0, 0]] = match kind {
                        PoolKind::Max => plane.fold(f64::NEG_INFINITY, |m, &v| m.max(v)),
                        PoolKind::Average => plane.sum() / plane.len() as f64,
                    };
                }
            }
            out
        }
        Op::Concat { axis } => {
            let views: Vec<_> = x.iter().map(|a| a.view()).collect();
            // Inference checked every shape but the axis; concatenate cannot fail here.
            ndarray::concatenate(Axis(*axis), &views).expect("shapes checked by inference")
        }
        Op::Flatten { axis } => {
            let s = x[0].shape();
            let outer: usize = s[..*axis].iter().product();
            let inner: usize = s[*axis..].iter().product();
            reshape(x[0], &[outer, inner])
        }
        Op::Reshape { shape } => reshape(x[0], shape),
        Op::Gemm(g) => gemm(g, x[0], x[1], x.get(2).copied()),
        Op::MatMul => matmul(x[0], x[1]),
        Op::Attention {
            scale,
            causal,
            guard,
        } => attention(x, *scale, *causal, *guard),
        Op::Identity => x[0].clone(),
        _ => crate::reference_index::apply(op, x),
    }
}

/// The same elements in `shape`, in row-major order.
fn reshape(x: &ArrayD<f64>, shape: &[usize]) -> ArrayD<f64> {
    let flat: Vec<f64> = x.iter().copied().collect();
    // Inference checked the element count.
    ArrayD::from_shape_vec(IxDyn(shape), flat).expect("element count checked by inference")
}

/// `f(a, b)` with NumPy broadcasting.
pub fn broadcast_with(
    a: &ArrayD<f64>,
    b: &ArrayD<f64>,
    f: impl Fn(f64, f64) -> f64,
) -> ArrayD<f64> {
    let shape = crate::infer::broadcast(a.shape(), b.shape()).expect("checked by inference");
    let av = a.broadcast(IxDyn(&shape)).expect("checked by inference");
    let bv = b.broadcast(IxDyn(&shape)).expect("checked by inference");
    let mut out = ArrayD::zeros(IxDyn(&shape));
    Zip::from(&mut out)
        .and(&av)
        .and(&bv)
        .for_each(|o, &p, &q| *o = f(p, q));
    out
}

fn conv(c: &Conv, x: &ArrayD<f64>, w: &ArrayD<f64>, bias: Option<&ArrayD<f64>>) -> ArrayD<f64> {
    let x = x
        .view()
        .into_dimensionality::<ndarray::Ix4>()
        .expect("rank checked");
    let w = w
        .view()
        .into_dimensionality::<ndarray::Ix4>()
        .expect("rank checked");
    let (n, ci, h, wd) = x.dim();
    let (k, cg, r, sw) = w.dim();
    let g = c.groups;
    let kg = k / g;
    let [st, sl] = c.strides;
    let [dh, dw] = c.dilations;
    let [pt, pl, pb, pr] = c.pads;
    let oh = crate::infer::window_out(h, r, st, dh, pt, pb, false).expect("checked");
    let ow = crate::infer::window_out(wd, sw, sl, dw, pl, pr, false).expect("checked");
    debug_assert_eq!(ci, cg * g);
    let mut out = Array4::<f64>::zeros((n, k, oh, ow));
    let rows = cg * r * sw;
    for b in 0..n {
        for grp in 0..g {
            // im2col: one column per output pixel, one row per (channel, r, s) of the group.
            let mut cols = Array2::<f64>::zeros((rows, oh * ow));
            for cc in 0..cg {
                let ch = grp * cg + cc;
                for i in 0..r {
                    for j in 0..sw {
                        let row = (cc * r + i) * sw + j;
                        for y in 0..oh {
                            let iy = (y * st + i * dh) as isize - pt as isize;
                            if iy < 0 || iy >= h as isize {
                                continue;
                            }
                            for xo in 0..ow {
                                let ix = (xo * sl + j * dw) as isize - pl as isize;
                                if ix >= 0 && ix < wd as isize {
                                    cols[[row, y * ow + xo]] = x[[b, ch, iy as usize, ix as usize]];
                                }
                            }
                        }
                    }
                }
            }
            let filters = w
                .slice(s![grp * kg..(grp + 1) * kg, .., .., ..])
                .to_shape((kg, rows))
                .expect("contiguous slice of the filter")
                .to_owned();
            let prod = filters.dot(&cols);
            for kk in 0..kg {
                let row = prod.row(kk);
                let mut plane = out.slice_mut(s![b, grp * kg + kk, .., ..]);
                for (o, &v) in plane.iter_mut().zip(row.iter()) {
                    *o = v;
                }
            }
        }
    }
    if let Some(bias) = bias {
        for kk in 0..k {
            let bv = bias[[kk]];
            out.slice_mut(s![.., kk, .., ..]).mapv_inplace(|v| v + bv);
        }
    }
    out.into_dyn()
}

fn pool(p: &Pool, x: &ArrayD<f64>) -> ArrayD<f64> {
    let s = x.shape();
    let (n, c, h, w) = (s[0], s[1], s[2], s[3]);
    let [pt, pl, pb, pr] = p.pads;
    let oh = crate::infer::window_out(h, p.kernel[0], p.strides[0], 1, pt, pb, p.ceil_mode)
        .expect("checked");
    let ow = crate::infer::window_out(w, p.kernel[1], p.strides[1], 1, pl, pr, p.ceil_mode)
        .expect("checked");
    let mut out = ArrayD::zeros(IxDyn(&[n, c, oh, ow]));
    for b in 0..n {
        for ch in 0..c {
            for y in 0..oh {
                for xo in 0..ow {
                    let y0 = (y * p.strides[0]) as isize - pt as isize;
                    let x0 = (xo * p.strides[1]) as isize - pl as isize;
                    let mut max = f64::NEG_INFINITY;
                    let mut sum = 0.0;
                    let mut inside = 0usize;
                    let mut padded = 0usize;
                    for i in 0..p.kernel[0] as isize {
                        for j in 0..p.kernel[1] as isize {
                            let (iy, ix) = (y0 + i, x0 + j);
                            // The window's part inside input + explicit padding counts for
                            // count_include_pad; ceil mode's overhang past it never does.
                            if iy < (h + pb) as isize && ix < (w + pr) as isize {
                                padded += 1;
                            }
                            if iy >= 0 && iy < h as isize && ix >= 0 && ix < w as isize {
                                let v = x[[b, ch, iy as usize, ix as usize]];
                                max = max.max(v);
                                sum += v;
                                inside += 1;
                            }
                        }
                    }
                    out[[b, ch, y, xo]] = match p.kind {
                        PoolKind::Max => max,
                        PoolKind::Average if p.count_include_pad => sum / padded as f64,
                        PoolKind::Average => sum / inside.max(1) as f64,
                    };
                }
            }
        }
    }
    out
}

fn as_matrix(a: &ArrayD<f64>) -> Array2<f64> {
    a.view()
        .into_dimensionality::<ndarray::Ix2>()
        .expect("rank checked")
        .to_owned()
}

fn gemm(g: &Gemm, a: &ArrayD<f64>, b: &ArrayD<f64>, c: Option<&ArrayD<f64>>) -> ArrayD<f64> {
    let mut a = as_matrix(a);
    let mut b = as_matrix(b);
    if g.trans_a {
        a = a.reversed_axes();
    }
    if g.trans_b {
        b = b.reversed_axes();
    }
    let mut out = (a.dot(&b) * g.alpha).into_dyn();
    if let Some(c) = c {
        out = broadcast_with(&out, c, |p, q| p + g.beta * q);
    }
    out
}

/// `softmax(scale · q·kᵀ + mask) · v` per leading index, in float64; a causal mask
/// masks with -inf, and a guarded row of all -inf gives zeros.
fn attention(x: &[&ArrayD<f64>], scale: f64, causal: bool, guard: bool) -> ArrayD<f64> {
    let (q, k, v) = (x[0], x[1], x[2]);
    let r = q.ndim();
    let (s, d, t, dv) = (
        q.shape()[r - 2],
        q.shape()[r - 1],
        k.shape()[r - 2],
        v.shape()[r - 1],
    );
    let lead: Vec<usize> = q.shape()[..r - 2].to_vec();
    let count: usize = lead.iter().product();
    let flat = |a: &ArrayD<f64>, rows: usize, cols: usize| {
        a.to_shape((count, rows, cols))
            .expect("inference checked the shapes")
            .to_owned()
    };
    let (q, k, v) = (flat(q, s, d), flat(k, t, d), flat(v, t, dv));
    let mut scores_shape = lead.clone();
    scores_shape.extend([s, t]);
    let mask = x.get(3).map(|m| {
        let b = m
            .broadcast(IxDyn(&scores_shape))
            .expect("inference checked the broadcast");
        b.to_shape((count, s, t))
            .expect("a broadcast view reshapes")
            .to_owned()
    });
    let mut out = Vec::with_capacity(count * s * dv);
    for z in 0..count {
        for i in 0..s {
            let scores: Vec<f64> = (0..t)
                .map(|j| {
                    if causal && j > i {
                        return f64::NEG_INFINITY;
                    }
                    let dot: f64 = (0..d).map(|e| q[[z, i, e]] * k[[z, j, e]]).sum();
                    dot * scale + mask.as_ref().map_or(0.0, |m| m[[z, i, j]])
                })
                .collect();
            let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let p: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = p.iter().sum();
            for c in 0..dv {
                let acc: f64 = (0..t).map(|j| p[j] * v[[z, j, c]]).sum();
                let y = acc / sum;
                out.push(if guard && y.is_nan() { 0.0 } else { y });
            }
        }
    }
    let mut shape = lead;
    shape.extend([s, dv]);
    ArrayD::from_shape_vec(IxDyn(&shape), out).expect("sizes match")
}

fn matmul(a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    let (ra, rb) = (a.ndim(), b.ndim());
    let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
    let n = b.shape()[rb - 1];
    let batch =
        crate::infer::broadcast(&a.shape()[..ra - 2], &b.shape()[..rb - 2]).expect("checked");
    let mut a_shape = batch.clone();
    a_shape.extend([m, k]);
    let mut b_shape = batch.clone();
    b_shape.extend([k, n]);
    let av = a.broadcast(IxDyn(&a_shape)).expect("checked");
    let bv = b.broadcast(IxDyn(&b_shape)).expect("checked");
    let count: usize = batch.iter().product();
    let av = av
        .to_shape((count, m, k))
        .expect("broadcast view")
        .to_owned();
    let bv = bv
        .to_shape((count, k, n))
        .expect("broadcast view")
        .to_owned();
    let mut out = Vec::with_capacity(count * m * n);
    for i in 0..count {
        let p = av.index_axis(Axis(0), i).dot(&bv.index_axis(Axis(0), i));
        out.extend(p.iter().copied());
    }
    let mut shape = batch;
    shape.extend([m, n]);
    ArrayD::from_shape_vec(IxDyn(&shape), out).expect("sizes match")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use weft_ir::dtype::DType;

    /// A direct 7-loop convolution, to check the im2col one against.
    fn naive_conv(c: &Conv, x: &Array4<f64>, w: &Array4<f64>) -> Array4<f64> {
        let (n, _, h, wd) = x.dim();
        let (k, cg, r, sw) = w.dim();
        let oh = crate::infer::window_out(
            h,
            r,
            c.strides[0],
            c.dilations[0],
            c.pads[0],
            c.pads[2],
            false,
        )
        .unwrap();
        let ow = crate::infer::window_out(
            wd,
            sw,
            c.strides[1],
            c.dilations[1],
            c.pads[1],
            c.pads[3],
            false,
        )
        .unwrap();
        let kg = k / c.groups;
        Array4::from_shape_fn((n, k, oh, ow), |(b, kk, y, xo)| {
            let grp = kk / kg;
            let mut acc = 0.0;
            for cc in 0..cg {
                for i in 0..r {
                    for j in 0..sw {
                        let iy =
                            (y * c.strides[0] + i * c.dilations[0]) as isize - c.pads[0] as isize;
                        let ix =
                            (xo * c.strides[1] + j * c.dilations[1]) as isize - c.pads[1] as isize;
                        if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd {
                            acc +=
                                x[[b, grp * cg + cc, iy as usize, ix as usize]] * w[[kk, cc, i, j]];
                        }
                    }
                }
            }
            acc
        })
    }

    #[test]
    fn conv_matches_the_direct_loops() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f64 / (1u64 << 31) as f64) - 0.5
        };
        for c in [
            Conv::new(1, 1),
            Conv {
                strides: [2, 1],
                pads: [0, 1, 2, 0],
                dilations: [1, 2],
                groups: 1,
            },
            Conv::new(2, 1).grouped(6),
            Conv::new(1, 0).grouped(3),
        ] {
            let x = Array4::from_shape_fn((2, 6, 9, 7), |_| next());
            let w = Array4::from_shape_fn((6, 6 / c.groups, 3, 3), |_| next());
            let got = conv(&c, &x.clone().into_dyn(), &w.clone().into_dyn(), None);
            let want = naive_conv(&c, &x, &w).into_dyn();
            assert_eq!(got.shape(), want.shape(), "{c:?}");
            let err = (&got - &want).mapv(f64::abs).fold(0.0f64, |m, &v| m.max(v));
            assert!(err < 1e-12, "{c:?}: {err}");
        }
    }

    #[test]
    fn pooling_counts_padding_as_onnx_does() {
        // 1x1x3x3 of ones, 2x2 average with stride 2 and pad 1: the first windows overlap
        // the padding; without count_include_pad every output is 1.
        let x = ArrayD::from_elem(IxDyn(&[1, 1, 3, 3]), 1.0);
        let mut p = Pool {
            kind: PoolKind::Average,
            kernel: [2, 2],
            strides: [2, 2],
            pads: [1, 1, 1, 1],
            ceil_mode: false,
            count_include_pad: false,
        };
        let out = pool(&p, &x);
        assert!(out.iter().all(|&v| (v - 1.0).abs() < 1e-15), "{out}");
        // With count_include_pad the corner window holds 1 input of 4, the top edge's 2 of
        // 4, the last window lies inside the input.
        p.count_include_pad = true;
        let out = pool(&p, &x);
        assert_eq!(out[[0, 0, 0, 0]], 0.25);
        assert_eq!(out[[0, 0, 0, 1]], 0.5);
        assert_eq!(out[[0, 0, 1, 1]], 1.0);
    }

    #[test]
    fn evaluates_a_small_graph() {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[2, 3], DType::F32);
        let w = b.weight(
            "w",
            ArrayD::from_shape_vec(IxDyn(&[4, 3]), (0..12).map(|v| v as f32).collect()).unwrap(),
        );
        let bias = b.weight(
            "b",
            ArrayD::from_shape_vec(IxDyn(&[4]), vec![1.0, -1.0, 0.5, 0.0]).unwrap(),
        );
        let y = b.linear("fc", x, w, bias).unwrap();
        let y = b.relu("relu", y).unwrap();
        b.output(y);
        let g = b.finish().unwrap();
        let input =
            ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1.0, 0.0, 0.0, 0.0, 0.0, -1.0]).unwrap();
        let out = evaluate(&g, &[input]).unwrap();
        // Row 0 picks w[:, 0] = [0, 3, 6, 9] + bias; row 1 is −w[:, 2] + bias, clamped.
        assert_eq!(
            out[0].as_slice().unwrap(),
            &[1.0, 2.0, 6.5, 9.0, 0.0, 0.0, 0.0, 0.0]
        );
        let err = evaluate(&g, &[ArrayD::zeros(IxDyn(&[3, 3]))]).unwrap_err();
        assert!(err.to_string().contains("input `x`"), "{err}");
    }
}
