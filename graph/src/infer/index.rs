//! Shape and dtype inference for the index maps (Transpose, Slice, Expand, Where, Cast,
//! the gathers) and the row reductions (Softmax, LayerNormalization, Reduce*) that
//! transformers use. Messages name the input and what was expected, as in [`crate::infer`].

use weft_ir::dtype::DType;

use super::{arity, broadcast, float, same_type};
use crate::op::Op;
use crate::tensor::Tensor;

/// The output shape and dtype of an index-map op.
pub(crate) fn infer(op: &Op, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
    match op {
        Op::Transpose { perm } => {
            arity(inputs, 1, 1)?;
            let s = &inputs[0].shape;
            let mut seen = vec![false; s.len()];
            if perm.len() != s.len() || perm.iter().any(|&p| p >= s.len()) {
                return Err(format!(
                    "perm {perm:?} is not a permutation of the {} dimensions of `{}` {s:?}",
                    s.len(),
                    inputs[0].name
                ));
            }
            for &p in perm {
                if std::mem::replace(&mut seen[p], true) {
                    return Err(format!("perm {perm:?} names dimension {p} twice"));
                }
            }
            Ok((perm.iter().map(|&p| s[p]).collect(), inputs[0].dtype))
        }
        Op::Slice {
            starts,
            steps,
            sizes,
        } => {
            arity(inputs, 1, 1)?;
            let s = &inputs[0].shape;
            if starts.len() != s.len() || steps.len() != s.len() || sizes.len() != s.len() {
                return Err(format!(
                    "starts {starts:?}, steps {steps:?} and sizes {sizes:?} must each give the {} dimensions of `{}` {s:?}",
                    s.len(),
                    inputs[0].name
                ));
            }
            for d in 0..s.len() {
                if sizes[d] == 0 {
                    continue;
                }
                let last = starts[d] as i64 + (sizes[d] as i64 - 1) * steps[d];
                if steps[d] == 0 || starts[d] >= s[d] || last < 0 || last >= s[d] as i64 {
                    return Err(format!(
                        "dimension {d}: {} elements from {} by {} leave [0, {})",
                        sizes[d], starts[d], steps[d], s[d]
                    ));
                }
            }
            Ok((sizes.clone(), inputs[0].dtype))
        }
        Op::Expand { shape } => {
            arity(inputs, 1, 1)?;
            match broadcast(&inputs[0].shape, shape) {
                Some(b) if &b == shape => Ok((shape.clone(), inputs[0].dtype)),
                _ => Err(format!(
                    "`{}` {:?} does not broadcast to {shape:?}",
                    inputs[0].name, inputs[0].shape
                )),
            }
        }
        Op::Where => {
            arity(inputs, 3, 3)?;
            same_type(&inputs[1..])?;
            let xy = broadcast(&inputs[1].shape, &inputs[2].shape);
            let shape = xy.and_then(|xy| broadcast(&inputs[0].shape, &xy));
            let shape = shape.ok_or_else(|| {
                format!(
                    "condition {:?}, x {:?} and y {:?} do not broadcast",
                    inputs[0].shape, inputs[1].shape, inputs[2].shape
                )
            })?;
            Ok((shape, inputs[1].dtype))
        }
        Op::IsNaN => {
            arity(inputs, 1, 1)?;
            float(inputs[0], 0)?;
            Ok((inputs[0].shape.clone(), DType::Bool))
        }
        Op::Cast { to } => {
            arity(inputs, 1, 1)?;
            if *to == DType::U32 {
                return Err("weft's graphs hold f32, f16, i32 and bool tensors, not u32".into());
            }
            Ok((inputs[0].shape.clone(), *to))
        }
        Op::Gather { axis } => {
            arity(inputs, 2, 2)?;
            let (data, idx) = (inputs[0], inputs[1]);
            integer(idx, 1)?;
            axis_of(*axis, data)?;
            let mut shape = data.shape[..*axis].to_vec();
            shape.extend(&idx.shape);
            shape.extend(&data.shape[axis + 1..]);
            Ok((shape, data.dtype))
        }
        Op::GatherElements { axis } => {
            arity(inputs, 2, 2)?;
            let (data, idx) = (inputs[0], inputs[1]);
            integer(idx, 1)?;
            axis_of(*axis, data)?;
            let fits = idx.shape.len() == data.shape.len()
                && (0..data.shape.len()).all(|d| d == *axis || idx.shape[d] <= data.shape[d]);
            if !fits {
                return Err(format!(
                    "indices `{}` {:?} must have the rank of data {:?} and no larger dimension but the axis",
                    idx.name, idx.shape, data.shape
                ));
            }
            Ok((idx.shape.clone(), data.dtype))
        }
        Op::GatherNd => {
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
            let mut shape = idx.shape[..idx.shape.len() - 1].to_vec();
            shape.extend(&data.shape[q..]);
            Ok((shape, data.dtype))
        }
        other => Err(format!("{} is not an index map", other.name())),
    }
}

/// The output shape and dtype of a row reduction.
pub(crate) fn reduction(op: &Op, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
    match op {
        Op::Softmax { axis } => {
            arity(inputs, 1, 1)?;
            float(inputs[0], 0)?;
            axis_of(*axis, inputs[0])?;
            Ok((inputs[0].shape.clone(), inputs[0].dtype))
        }
        Op::LayerNorm { axis, epsilon } => {
            arity(inputs, 2, 3)?;
            float(inputs[0], 0)?;
            let x = inputs[0];
            axis_of(*axis, x)?;
            if epsilon.is_nan() || *epsilon < 0.0 {
                return Err(format!("epsilon {epsilon} is not a non-negative number"));
            }
            let normalized = &x.shape[*axis..];
            for (i, t) in inputs.iter().enumerate().skip(1) {
                float(t, i)?;
                if broadcast(&t.shape, normalized).as_deref() != Some(normalized) {
                    return Err(format!(
                        "input {i} `{}` {:?} does not broadcast to the normalized dimensions {normalized:?}",
                        t.name, t.shape
                    ));
                }
            }
            Ok((x.shape.clone(), x.dtype))
        }
        Op::Reduce {
            axes, keep_dims, ..
        } => {
            arity(inputs, 1, 1)?;
            float(inputs[0], 0)?;
            let s = &inputs[0].shape;
            if axes.windows(2).any(|w| w[0] >= w[1]) || axes.iter().any(|&a| a >= s.len()) {
                return Err(format!(
                    "axes {axes:?} must be distinct dimensions of `{}` {s:?}, in order",
                    inputs[0].name
                ));
            }
            let shape = s
                .iter()
                .enumerate()
                .filter_map(|(d, &n)| match (axes.contains(&d), keep_dims) {
                    (false, _) => Some(n),
                    (true, true) => Some(1),
                    (true, false) => None,
                })
                .collect();
            Ok((shape, inputs[0].dtype))
        }
        other => Err(format!("{} is not a row reduction", other.name())),
    }
}

fn integer(t: &Tensor, i: usize) -> Result<(), String> {
    if t.dtype.is_int() {
        Ok(())
    } else {
        Err(format!(
            "input {i} `{}` (the indices) is {}, not an integer",
            t.name, t.dtype
        ))
    }
}

fn axis_of(axis: usize, t: &Tensor) -> Result<(), String> {
    if axis < t.shape.len() {
        Ok(())
    } else {
        Err(format!(
            "axis {axis} is out of range for `{}` {:?}",
            t.name, t.shape
        ))
    }
}
