//! What the ops' inference shares: input counts, element types, ranks, NumPy
//! broadcasting and window arithmetic. Messages name the input and what was expected;
//! the graph adds the node.

use crate::tensor::Tensor;

/// Between `min` and `max` inputs (`usize::MAX`: no upper bound).
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

/// Input `i` is a float.
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
pub(crate) fn same_dtype(inputs: &[&Tensor]) -> Result<(), String> {
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
pub(crate) fn rank(t: &Tensor, i: usize, r: usize) -> Result<&[usize], String> {
    if t.shape.len() == r {
        Ok(&t.shape)
    } else {
        Err(format!(
            "input {i} `{}` has shape {:?}, not rank {r}",
            t.name, t.shape
        ))
    }
}

/// Input `i` (indices) is an integer tensor.
pub(crate) fn integer(t: &Tensor, i: usize) -> Result<(), String> {
    if t.dtype.is_int() {
        Ok(())
    } else {
        Err(format!(
            "input {i} `{}` (the indices) is {}, not an integer",
            t.name, t.dtype
        ))
    }
}

/// `axis` is a dimension of `t`.
pub(crate) fn axis_of(axis: usize, t: &Tensor) -> Result<(), String> {
    if axis < t.shape.len() {
        Ok(())
    } else {
        Err(format!(
            "axis {axis} is out of range for `{}` {:?}",
            t.name, t.shape
        ))
    }
}

/// `epsilon` is a non-negative number.
pub(crate) fn epsilon(epsilon: f64) -> Result<(), String> {
    if epsilon.is_nan() || epsilon < 0.0 {
        return Err(format!("epsilon {epsilon} is not a non-negative number"));
    }
    Ok(())
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
            (_, _) => None,
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
