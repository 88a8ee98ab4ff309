//! Windows and shapes from attributes: padding with `auto_pad` resolved, axes made
//! non-negative, Reshape's target with its 0s and -1 resolved.

use super::attrs::{Attrs, MAX_WINDOW};
use crate::error::ImportError;

/// Positive sizes from an attribute list.
pub(super) fn positive(a: &Attrs, attr: &str, v: &[i64]) -> Result<Vec<usize>, ImportError> {
    v.iter()
        .map(|&d| {
            usize::try_from(d)
                .ok()
                .filter(|&d| d > 0 && d <= MAX_WINDOW as usize)
                .ok_or_else(|| {
                    a.err(
                        attr,
                        format!("{v:?} has a size that is not in 1..={MAX_WINDOW}"),
                    )
                })
        })
        .collect()
}

/// An axis in `-rank..rank` (`..=rank` where `inclusive`) as a non-negative one.
pub(super) fn axis_in(
    a: &Attrs,
    attr: &str,
    axis: i64,
    rank: usize,
    inclusive: bool,
) -> Result<usize, ImportError> {
    let r = rank as i64;
    let hi = if inclusive { r } else { r - 1 };
    let resolved = if axis < 0 { axis + r } else { axis };
    if resolved < 0 || resolved > hi {
        return Err(a.err(attr, format!("{axis} is out of range for rank {rank}")));
    }
    Ok(resolved as usize)
}

/// Explicit `[top, left, bottom, right]` padding from `pads` and `auto_pad`: SAME_UPPER
/// and SAME_LOWER pad so the output is `ceil(input / stride)`, the odd pixel at the end
/// or the beginning.
pub(super) fn pads(
    a: &Attrs,
    input: [usize; 2],
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
) -> Result<[usize; 4], ImportError> {
    let auto = a.string("auto_pad", "NOTSET")?;
    let explicit = match a.ints("pads")? {
        None => [0; 4],
        Some(&[t, l, b, r]) if [t, l, b, r].iter().all(|p| (0..=MAX_WINDOW).contains(p)) => {
            [t as usize, l as usize, b as usize, r as usize]
        }
        Some(v) => {
            return Err(a.err(
                "pads",
                format!("{v:?}: weft takes four values in 0..={MAX_WINDOW} (2-D)"),
            ));
        }
    };
    match auto.as_str() {
        "NOTSET" => Ok(explicit),
        "VALID" => Ok([0; 4]),
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut p = [0; 4];
            for ax in 0..2 {
                if input[ax] == 0 {
                    continue;
                }
                let out = input[ax].div_ceil(strides[ax]);
                let span = dilations[ax] * (kernel[ax] - 1) + 1;
                let total = ((out - 1) * strides[ax] + span).saturating_sub(input[ax]);
                let (small, big) = (total / 2, total - total / 2);
                let (lo, hi) = if auto == "SAME_UPPER" {
                    (small, big)
                } else {
                    (big, small)
                };
                p[ax] = lo;
                p[ax + 2] = hi;
            }
            Ok(p)
        }
        other => Err(a.err(
            "auto_pad",
            format!("`{other}` is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"),
        )),
    }
}

/// Reshape's target: 0 copies the input's dimension (unless `allowzero`), one −1 takes
/// what is left.
pub(crate) fn resolve_reshape(
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

/// A slice per dimension: where it starts, its step, how many elements it keeps.
pub(crate) type Resolved = (Vec<usize>, Vec<i64>, Vec<usize>);

/// ONNX Slice's `starts`, `ends`, `axes` (all where `None`) and `steps` (1s where
/// `None`) on a tensor of `dims`, resolved per dimension to where it starts, its step
/// and how many elements it keeps (negative bounds counted from the end, then clamped).
pub(crate) fn resolve_slice(
    dims: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> Result<Resolved, String> {
    let rank = dims.len() as i64;
    let all: Vec<i64> = (0..rank).collect();
    let axes = axes.unwrap_or(&all[..starts.len().min(all.len())]);
    let ones = vec![1; starts.len()];
    let steps = steps.unwrap_or(&ones);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(format!(
            "starts {starts:?}, ends {ends:?}, axes {axes:?} and steps {steps:?} differ in length"
        ));
    }
    let mut out_start: Vec<usize> = vec![0; dims.len()];
    let mut out_step: Vec<i64> = vec![1; dims.len()];
    let mut out_size: Vec<usize> = dims.to_vec();
    let mut seen = vec![false; dims.len()];
    for k in 0..starts.len() {
        let a = if axes[k] < 0 { axes[k] + rank } else { axes[k] };
        if a < 0 || a >= rank || std::mem::replace(&mut seen[a as usize], true) {
            return Err(format!(
                "axes {axes:?}: {} is out of range or repeated",
                axes[k]
            ));
        }
        let a = a as usize;
        let n = dims[a] as i64;
        let step = steps[k];
        if step == 0 {
            return Err(format!("steps {steps:?} has a 0"));
        }
        let from_end = |v: i64| if v < 0 { v.saturating_add(n) } else { v };
        let (s, e) = (from_end(starts[k]), from_end(ends[k]));
        let (s, size) = if step > 0 {
            let (s, e) = (s.clamp(0, n), e.clamp(0, n));
            (s, if e > s { (e - s + step - 1) / step } else { 0 })
        } else {
            let (s, e) = (s.clamp(0, n - 1), e.clamp(-1, n - 1));
            (
                s,
                if s > e {
                    (s - e + (-step) - 1) / (-step)
                } else {
                    0
                },
            )
        };
        out_start[a] = s.max(0) as usize;
        out_step[a] = step;
        out_size[a] = size as usize;
    }
    Ok((out_start, out_step, out_size))
}

#[cfg(test)]
mod slice_tests {
    use super::resolve_slice;

    #[test]
    fn slices_resolve_as_onnx_says() {
        // x[1:-1], x[::-2] and x[-100:i64::MAX] on dims [5, 6, 7].
        let (s, k, n) = resolve_slice(
            &[5, 6, 7],
            &[1, -1, -100],
            &[-1, i64::MIN, i64::MAX],
            Some(&[0, 1, 2]),
            Some(&[1, -2, 1]),
        )
        .unwrap();
        assert_eq!((s, k, n), (vec![1, 5, 0], vec![1, -2, 1], vec![3, 3, 7]));
        assert!(resolve_slice(&[4], &[0], &[4], None, Some(&[0])).is_err());
    }
}
