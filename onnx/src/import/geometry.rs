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
