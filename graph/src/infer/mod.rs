//! Shape and dtype inference: what an op gives for its inputs, or what is wrong with
//! them (the message names the input and what was expected; the graph adds the node).

mod index;

use weft_ir::dtype::DType;

use crate::op::{Binary, Conv, Gemm, Op, Pool, Unary};
use crate::tensor::Tensor;

/// The output shape and dtype of `op` on `inputs`.
pub fn infer(op: &Op, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
    match op {
        Op::Conv(c) => conv(c, inputs),
        Op::BatchNorm { epsilon } => {
            arity(inputs, 5, 5)?;
            if epsilon.is_nan() || *epsilon < 0.0 {
                return Err(format!("epsilon {epsilon} is not a non-negative number"));
            }
            let x = inputs[0];
            if x.shape.len() < 2 {
                return Err(format!(
                    "input 0 `{}` has rank {}, not at least 2",
                    x.name,
                    x.shape.len()
                ));
            }
            let c = x.shape[1];
            for (i, t) in inputs.iter().enumerate().skip(1) {
                if t.shape != [c] {
                    return Err(format!(
                        "input {i} `{}` has shape {:?}, not [{c}] (the channels of `{}`)",
                        t.name, t.shape, x.name
                    ));
                }
            }
            same_dtype(inputs)?;
            Ok((x.shape.clone(), x.dtype))
        }
        Op::Unary(Unary::Not) => {
            arity(inputs, 1, 1)?;
            if inputs[0].dtype != DType::Bool {
                return Err(format!(
                    "input 0 `{}` is {}, not bool",
                    inputs[0].name, inputs[0].dtype
                ));
            }
            Ok((inputs[0].shape.clone(), DType::Bool))
        }
        Op::Unary(_) | Op::Clip { .. } => {
            arity(inputs, 1, 1)?;
            float(inputs[0], 0)?;
            Ok((inputs[0].shape.clone(), inputs[0].dtype))
        }
        Op::Identity => {
            arity(inputs, 1, 1)?;
            Ok((inputs[0].shape.clone(), inputs[0].dtype))
        }
        Op::Binary(b) => {
            arity(inputs, 2, 2)?;
            same_type(inputs)?;
            if matches!(b, Binary::And | Binary::Or | Binary::Xor) && inputs[0].dtype != DType::Bool
            {
                return Err(format!("inputs are {}, not bool", inputs[0].dtype));
            }
            if matches!(b, Binary::Pow | Binary::PRelu) {
                float(inputs[0], 0)?;
            }
            let shape = broadcast(&inputs[0].shape, &inputs[1].shape).ok_or_else(|| {
                format!(
                    "inputs `{}` {:?} and `{}` {:?} do not broadcast",
                    inputs[0].name, inputs[0].shape, inputs[1].name, inputs[1].shape
                )
            })?;
            let dtype = if b.gives_bool() {
                DType::Bool
            } else {
                inputs[0].dtype
            };
            Ok((shape, dtype))
        }
        Op::Pool(p) => pool(p, inputs),
        Op::GlobalPool(_) => {
            arity(inputs, 1, 1)?;
            let x = rank(inputs[0], 0, 4)?;
            Ok((vec![x[0], x[1], 1, 1], inputs[0].dtype))
        }
        Op::Concat { axis } => {
            arity(inputs, 1, usize::MAX)?;
            same_type(inputs)?;
            let first = &inputs[0].shape;
            if *axis >= first.len() {
                return Err(format!(
                    "axis {axis} is out of range for rank {}",
                    first.len()
                ));
            }
            let mut shape = first.clone();
            shape[*axis] = 0;
            for (i, t) in inputs.iter().enumerate() {
                let same_rank = t.shape.len() == first.len();
                let same_rest = same_rank
                    && t.shape
                        .iter()
                        .zip(first)
                        .enumerate()
                        .all(|(d, (a, b))| d == *axis || a == b);
                if !same_rest {
                    return Err(format!(
                        "input {i} `{}` has shape {:?}; every input must match {:?} except along axis {axis}",
                        t.name, t.shape, first
                    ));
                }
                shape[*axis] += t.shape[*axis];
            }
            Ok((shape, inputs[0].dtype))
        }
        Op::Flatten { axis } => {
            arity(inputs, 1, 1)?;
            let s = &inputs[0].shape;
            if *axis > s.len() {
                return Err(format!("axis {axis} is out of range for rank {}", s.len()));
            }
            let outer: usize = s[..*axis].iter().product();
            let inner: usize = s[*axis..].iter().product();
            Ok((vec![outer, inner], inputs[0].dtype))
        }
        Op::Reshape { shape } => {
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
        Op::Gemm(g) => gemm(g, inputs),
        Op::Transpose { .. }
        | Op::Slice { .. }
        | Op::Expand { .. }
        | Op::Where
        | Op::IsNaN
        | Op::Cast { .. }
        | Op::Gather { .. }
        | Op::GatherElements { .. }
        | Op::GatherNd => index::infer(op, inputs),
        Op::Softmax { .. } | Op::LayerNorm { .. } | Op::Reduce { .. } => {
            index::reduction(op, inputs)
        }
        Op::Attention { .. } => attention(inputs),
        Op::MatMul => {
            arity(inputs, 2, 2)?;
            same_dtype(inputs)?;
            let (a, b) = (&inputs[0].shape, &inputs[1].shape);
            if a.len() < 2 || b.len() < 2 {
                return Err(format!(
                    "inputs `{}` {:?} and `{}` {:?}: MatMul here takes matrices or batches of them",
                    inputs[0].name, a, inputs[1].name, b
                ));
            }
            let (m, k) = (a[a.len() - 2], a[a.len() - 1]);
            let (k2, n) = (b[b.len() - 2], b[b.len() - 1]);
            if k != k2 {
                return Err(format!(
                    "`{}` {:?} has {k} columns, `{}` {:?} has {k2} rows",
                    inputs[0].name, a, inputs[1].name, b
                ));
            }
            let batch = broadcast(&a[..a.len() - 2], &b[..b.len() - 2])
                .ok_or_else(|| format!("batch dimensions {a:?} and {b:?} do not broadcast"))?;
            let mut shape = batch;
            shape.extend([m, n]);
            Ok((shape, inputs[0].dtype))
        }
    }
}

/// `q` `[..., s, d]`, `k` `[..., t, d]`, `v` `[..., t, dv]` with the same leading
/// dimensions, an optional mask broadcasting to `[..., s, t]`: `[..., s, dv]`.
fn attention(inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
    arity(inputs, 3, 4)?;
    same_dtype(&inputs[..3])?;
    let (q, k, v) = (&inputs[0].shape, &inputs[1].shape, &inputs[2].shape);
    let r = q.len();
    if r < 3 || k.len() != r || v.len() != r {
        return Err(format!(
            "q {q:?}, k {k:?} and v {v:?} must be of one rank, 3 or more"
        ));
    }
    if k[..r - 2] != q[..r - 2] || v[..r - 2] != q[..r - 2] {
        return Err(format!(
            "q {q:?}, k {k:?} and v {v:?} must have the same leading dimensions"
        ));
    }
    if k[r - 1] != q[r - 1] || v[r - 2] != k[r - 2] {
        return Err(format!(
            "q {q:?}, k {k:?}, v {v:?}: q and k need one head size, k and v one length"
        ));
    }
    let mut scores = q[..r - 1].to_vec();
    scores.push(k[r - 2]);
    if let Some(m) = inputs.get(3) {
        float(m, 3)?;
        if broadcast(&m.shape, &scores).as_deref() != Some(&scores[..]) {
            return Err(format!(
                "the mask `{}` {:?} does not broadcast to the scores {scores:?}",
                m.name, m.shape
            ));
        }
    }
    let mut shape = q[..r - 1].to_vec();
    shape.push(v[r - 1]);
    Ok((shape, inputs[0].dtype))
}

pub(crate) fn arity(inputs: &[&Tensor], min: usize, max: usize) -> Result<(), String> {
    if inputs.len() < min || inputs.len() > max {
        let want = if min == max {
            format!("{min}")
        } else if max == usize::MAX {
            format!("at least {min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(format!("takes {want} inputs, got {}", inputs.len()));
    }
    Ok(())
}

pub(crate) fn float(t: &Tensor, i: usize) -> Result<(), String> {
    if t.dtype.is_float() {
        Ok(())
    } else {
        Err(format!(
            "input {i} `{}` is {}, not a float",
            t.name, t.dtype
        ))
    }
}

/// Every input a float, all of one type.
fn same_dtype(inputs: &[&Tensor]) -> Result<(), String> {
    for (i, t) in inputs.iter().enumerate() {
        float(t, i)?;
    }
    same_type(inputs)
}

/// Every input of one element type.
pub(crate) fn same_type(inputs: &[&Tensor]) -> Result<(), String> {
    for (i, t) in inputs.iter().enumerate() {
        if t.dtype != inputs[0].dtype {
            return Err(format!(
                "input {i} `{}` is {}, input 0 `{}` is {}",
                t.name, t.dtype, inputs[0].name, inputs[0].dtype
            ));
        }
    }
    Ok(())
}

/// The shape of `t` (input `i`) if it has rank `r`.
fn rank(t: &Tensor, i: usize, r: usize) -> Result<&[usize], String> {
    if t.shape.len() == r {
        Ok(&t.shape)
    } else {
        Err(format!(
            "input {i} `{}` has shape {:?}, not rank {r}",
            t.name, t.shape
        ))
    }
}

/// NumPy's broadcast of two shapes (aligned at the right; a 1 stretches).
pub fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        let pad = n - s.len();
        if i < pad { 1 } else { s[i - pad] }
    };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// Output size of a window of `k` (dilated to `d·(k−1)+1`) sliding by `s` over `n` padded
/// with `lo` and `hi`; `None` where the window does not fit once.
pub fn window_out(
    n: usize,
    k: usize,
    s: usize,
    d: usize,
    lo: usize,
    hi: usize,
    ceil: bool,
) -> Option<usize> {
    let span = d * (k.max(1) - 1) + 1;
    let padded = n + lo + hi;
    if s == 0 || padded < span {
        return None;
    }
    let steps = padded - span;
    let mut out = if ceil { steps.div_ceil(s) } else { steps / s } + 1;
    // With ceil_mode the last window must still start inside the input or its leading
    // padding (PyTorch's and ONNX's rule).
    if ceil && (out - 1) * s >= n + lo {
        out -= 1;
    }
    Some(out)
}

fn conv(c: &Conv, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
    arity(inputs, 2, 3)?;
    same_dtype(inputs)?;
    let x = rank(inputs[0], 0, 4)?;
    let w = rank(inputs[1], 1, 4)?;
    let g = c.groups;
    if g == 0 || x[1] % g != 0 || w[0] % g != 0 {
        return Err(format!(
            "groups = {g} must divide the input's {} channels and the filter's {} outputs",
            x[1], w[0]
        ));
    }
    if w[1] * g != x[1] {
        return Err(format!(
            "filter `{}` {:?} takes {} input channels per group, the input has {} in {g} groups",
            inputs[1].name, w, w[1], x[1]
        ));
    }
    if let Some(b) = inputs.get(2)
        && b.shape != [w[0]]
    {
        return Err(format!(
            "bias `{}` has shape {:?}, not [{}]",
            b.name, b.shape, w[0]
        ));
    }
    let [st, sl] = c.strides;
    let [dh, dw] = c.dilations;
    let [pt, pl, pb, pr] = c.pads;
    let oh = window_out(x[2], w[2], st, dh, pt, pb, false);
    let ow = window_out(x[3], w[3], sl, dw, pl, pr, false);
    let (Some(oh), Some(ow)) = (oh, ow) else {
        return Err(format!(
            "the {}x{} filter (dilations {:?}, strides {:?}) does not fit the {}x{} input padded by {:?}",
            w[2], w[3], c.dilations, c.strides, x[2], x[3], c.pads
        ));
    };
    Ok((vec![x[0], w[0], oh, ow], inputs[0].dtype))
}

fn pool(p: &Pool, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
    arity(inputs, 1, 1)?;
    float(inputs[0], 0)?;
    let x = rank(inputs[0], 0, 4)?;
    let [pt, pl, pb, pr] = p.pads;
    if pt >= p.kernel[0] || pb >= p.kernel[0] || pl >= p.kernel[1] || pr >= p.kernel[1] {
        return Err(format!(
            "pads {:?} must be smaller than the {}x{} window",
            p.pads, p.kernel[0], p.kernel[1]
        ));
    }
    let oh = window_out(x[2], p.kernel[0], p.strides[0], 1, pt, pb, p.ceil_mode);
    let ow = window_out(x[3], p.kernel[1], p.strides[1], 1, pl, pr, p.ceil_mode);
    let (Some(oh), Some(ow)) = (oh, ow) else {
        return Err(format!(
            "the {}x{} window (strides {:?}) does not fit the {}x{} input padded by {:?}",
            p.kernel[0], p.kernel[1], p.strides, x[2], x[3], p.pads
        ));
    };
    Ok((vec![x[0], x[1], oh, ow], inputs[0].dtype))
}

fn gemm(g: &Gemm, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
    arity(inputs, 2, 3)?;
    same_dtype(inputs)?;
    let a = rank(inputs[0], 0, 2)?;
    let b = rank(inputs[1], 1, 2)?;
    let (m, k) = if g.trans_a {
        (a[1], a[0])
    } else {
        (a[0], a[1])
    };
    let (k2, n) = if g.trans_b {
        (b[1], b[0])
    } else {
        (b[0], b[1])
    };
    if k != k2 {
        return Err(format!(
            "op(A) is {m}x{k} and op(B) {k2}x{n}: the inner sizes differ"
        ));
    }
    if let Some(c) = inputs.get(2)
        && broadcast(&c.shape, &[m, n]).as_deref() != Some(&[m, n][..])
    {
        return Err(format!(
            "C `{}` {:?} does not broadcast to the {m}x{n} product",
            c.name, c.shape
        ));
    }
    Ok((vec![m, n], inputs[0].dtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows() {
        // ResNet's stem: 224, 7x7, stride 2, pad 3 → 112; its max pool 3x3/2 pad 1 → 56.
        assert_eq!(window_out(224, 7, 2, 1, 3, 3, false), Some(112));
        assert_eq!(window_out(112, 3, 2, 1, 1, 1, false), Some(56));
        // Inception's 3x3/2 pools without padding: 147 → 73; ceil mode: 73 → 36 vs 37.
        assert_eq!(window_out(147, 3, 2, 1, 0, 0, false), Some(73));
        assert_eq!(window_out(6, 3, 2, 1, 0, 0, false), Some(2));
        assert_eq!(window_out(6, 3, 2, 1, 0, 0, true), Some(3));
        // ceil mode may not start a window in the trailing padding only.
        assert_eq!(window_out(5, 2, 2, 1, 0, 1, true), Some(3));
        assert_eq!(window_out(2, 3, 1, 1, 0, 0, false), None);
    }

    #[test]
    fn broadcasts() {
        assert_eq!(
            broadcast(&[1, 64, 56, 56], &[64, 1, 1]),
            Some(vec![1, 64, 56, 56])
        );
        assert_eq!(broadcast(&[3], &[2, 1]), Some(vec![2, 3]));
        assert_eq!(broadcast(&[3], &[2]), None);
    }
}
