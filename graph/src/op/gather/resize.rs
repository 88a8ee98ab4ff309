//! ONNX's Resize (11, 13, 18, 19) and Upsample (9) as gathers: the interpolation is
//! separable, so each resized axis is a sum over its taps (1 for nearest, 2 for linear,
//! 4 for cubic) of a [`Gather`] of the input along that axis at constant indices, times a
//! constant weight per output position. The indices and weights are computed here, in
//! float64, from the coordinate transformation; the graph then holds only Gather, Mul,
//! Add (and a Where for `tf_crop_and_resize`'s extrapolation), which the partition fuses
//! into one injective kernel, and the float64 reference evaluates exactly.
//!
//! Out-of-range taps read the edge (ONNX's edge padding), or weigh nothing where cubic
//! excludes the outside. `antialias` is refused.

use weft_ir::dtype::DType;

use super::Gather;
use crate::op::onnx::{ConstValues, OnnxError, OnnxNode};
use crate::op::{Binary, Op};
use crate::tensor::TensorId;

/// How a non-integer coordinate picks its nearest input (`nearest_mode`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Round {
    PreferFloor,
    PreferCeil,
    Floor,
    Ceil,
}

/// The interpolation (`mode`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Nearest(Round),
    Linear,
    Cubic { a: f64, exclude_outside: bool },
}

/// `coordinate_transformation_mode`: an output index to an input coordinate.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Coord {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfHalfPixelForNn,
    TfCropAndResize,
}

/// One axis as resized: its lengths, its scale and (for `tf_crop_and_resize`) its region.
#[derive(Clone, Copy, Debug)]
struct Axis {
    input: usize,
    output: usize,
    scale: f64,
    roi: (f64, f64),
}

/// The input coordinate output index `i` reads, or `None` outside the crop region.
fn coordinate(coord: Coord, ax: &Axis, i: usize) -> Option<f64> {
    let (x, n_in, n_out, s) = (i as f64, ax.input as f64, ax.output as f64, ax.scale);
    Some(match coord {
        Coord::HalfPixel => (x + 0.5) / s - 0.5,
        Coord::HalfPixelSymmetric => {
            let adjustment = n_out / (s * n_in);
            let offset = n_in / 2.0 * (1.0 - adjustment);
            offset + (x + 0.5) / s - 0.5
        }
        Coord::PytorchHalfPixel if ax.output > 1 => (x + 0.5) / s - 0.5,
        Coord::PytorchHalfPixel => 0.0,
        Coord::AlignCorners if ax.output > 1 => x * (n_in - 1.0) / (n_out - 1.0),
        Coord::AlignCorners => 0.0,
        Coord::Asymmetric => x / s,
        Coord::TfHalfPixelForNn => (x + 0.5) / s,
        Coord::TfCropAndResize => {
            let (a, b) = ax.roi;
            let c = if ax.output > 1 {
                a * (n_in - 1.0) + x * (b - a) * (n_in - 1.0) / (n_out - 1.0)
            } else {
                0.5 * (a + b) * (n_in - 1.0)
            };
            if c < 0.0 || c > n_in - 1.0 {
                return None;
            }
            c
        }
    })
}

/// Output index `i`'s taps on `ax`: input indices (clamped to the edge) and weights;
/// `None` where it takes the extrapolation value.
fn taps(mode: Mode, coord: Coord, ax: &Axis, i: usize) -> Option<Vec<(usize, f64)>> {
    let x = coordinate(coord, ax, i)?;
    let last = ax.input as i64 - 1;
    let clamp = |j: i64| j.clamp(0, last) as usize;
    let base = x.floor();
    let t = x - base;
    let base = base as i64;
    Some(match mode {
        Mode::Nearest(round) => {
            // An integer coordinate is its own nearest input in every mode.
            let up = t != 0.0
                && match round {
                    Round::PreferFloor => t > 0.5,
                    Round::PreferCeil => t >= 0.5,
                    Round::Floor => false,
                    Round::Ceil => true,
                };
            vec![(clamp(base + i64::from(up)), 1.0)]
        }
        Mode::Linear => vec![(clamp(base), 1.0 - t), (clamp(base + 1), t)],
        Mode::Cubic { a, exclude_outside } => {
            let cubic = |d: f64| {
                // d = distance from the coordinate, in [0, 2).
                if d <= 1.0 {
                    ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
                } else {
                    ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
                }
            };
            let mut w: Vec<(i64, f64)> = (-1..=2)
                .map(|k| (base + k, cubic((t - k as f64).abs())))
                .collect();
            if exclude_outside {
                for (j, wt) in &mut w {
                    if *j < 0 || *j > last {
                        *wt = 0.0;
                    }
                }
                let sum: f64 = w.iter().map(|(_, wt)| wt).sum();
                for (_, wt) in &mut w {
                    *wt /= sum;
                }
            }
            w.into_iter().map(|(j, wt)| (clamp(j), wt)).collect()
        }
    })
}

/// ONNX's Resize, opsets 11 to 19.
pub(in crate::op) fn import_resize(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let shape = n.shape(x);
    let r = shape.len();
    let opset = n.opset();
    if n.int("antialias", 0)? != 0 {
        return Err(n.attr_err("antialias", "weft resizes without antialiasing"));
    }
    let axes = match n.ints("axes")? {
        None => (0..r).collect::<Vec<_>>(),
        Some(v) => {
            let mut axes = Vec::with_capacity(v.len());
            for &a in &v {
                let a = n.axis("axes", a, r, false)?;
                if axes.contains(&a) {
                    return Err(n.attr_err("axes", format!("{v:?} names an axis twice")));
                }
                axes.push(a);
            }
            axes
        }
    };
    let mode = match n.string("mode", "nearest")?.as_str() {
        "nearest" => {
            Mode::Nearest(
                match n.string("nearest_mode", "round_prefer_floor")?.as_str() {
                    "round_prefer_floor" => Round::PreferFloor,
                    "round_prefer_ceil" => Round::PreferCeil,
                    "floor" => Round::Floor,
                    "ceil" => Round::Ceil,
                    other => {
                        return Err(n.attr_err(
                    "nearest_mode",
                    format!("`{other}` is not round_prefer_floor, round_prefer_ceil, floor or ceil"),
                ));
                    }
                },
            )
        }
        "linear" => Mode::Linear,
        "cubic" => Mode::Cubic {
            a: n.float("cubic_coeff_a", -0.75)?,
            exclude_outside: n.flag("exclude_outside", false)?,
        },
        other => {
            return Err(n.attr_err("mode", format!("`{other}` is not nearest, linear or cubic")));
        }
    };
    let coord = match n
        .string("coordinate_transformation_mode", "half_pixel")?
        .as_str()
    {
        "half_pixel" => Coord::HalfPixel,
        "half_pixel_symmetric" if opset >= 19 => Coord::HalfPixelSymmetric,
        "pytorch_half_pixel" => Coord::PytorchHalfPixel,
        "align_corners" => Coord::AlignCorners,
        "asymmetric" => Coord::Asymmetric,
        "tf_half_pixel_for_nn" if opset < 13 => Coord::TfHalfPixelForNn,
        "tf_crop_and_resize" => Coord::TfCropAndResize,
        other => {
            return Err(n.attr_err(
                "coordinate_transformation_mode",
                format!("`{other}` is not a mode of Resize at opset {opset}"),
            ));
        }
    };
    let extrapolation = n.float("extrapolation_value", 0.0)?;
    let floats = |n: &dyn OnnxNode, i: usize, what: &str| -> Result<Option<Vec<f64>>, OnnxError> {
        if !n.has_input(i) {
            return Ok(None);
        }
        match n.constant(i)? {
            None => Ok(None),
            Some(c) => match c.values {
                ConstValues::Floats(v) if v.is_empty() => Ok(None),
                ConstValues::Floats(v) => Ok(Some(v)),
                ConstValues::Ints(v) if v.is_empty() => Ok(None),
                ConstValues::Ints(_) => {
                    Err(n.err(format!("input {i} ({what}) is not a float tensor")))
                }
            },
        }
    };
    let scales = floats(n, 2, "scales")?;
    let sizes = if n.has_input(3) {
        n.int_input(3, "sizes")?.filter(|v| !v.is_empty())
    } else {
        None
    };
    let roi = if coord == Coord::TfCropAndResize {
        floats(n, 1, "roi")?
    } else {
        None
    };
    let policy = n.string("keep_aspect_ratio_policy", "stretch")?;
    let k = axes.len();
    let mut ax: Vec<Axis> = shape
        .iter()
        .map(|&d| Axis {
            input: d,
            output: d,
            scale: 1.0,
            roi: (0.0, 1.0),
        })
        .collect();
    if let Some(roi) = &roi {
        if roi.len() != 2 * k {
            return Err(n.err(format!(
                "roi has {} values, not {} (a start and an end per resized axis)",
                roi.len(),
                2 * k
            )));
        }
        for (j, &a) in axes.iter().enumerate() {
            ax[a].roi = (roi[j], roi[k + j]);
        }
    }
    match (scales, sizes) {
        (Some(_), Some(_)) => return Err(n.err("both scales and sizes are given; ONNX allows one")),
        (None, None) => return Err(n.err("neither scales nor sizes is given")),
        (Some(s), None) => {
            if s.len() != k {
                return Err(n.err(format!("scales has {} values for {k} axes", s.len())));
            }
            for (j, &a) in axes.iter().enumerate() {
                if !(s[j] > 0.0 && s[j].is_finite()) {
                    return Err(n.err(format!("scales {s:?} must be positive")));
                }
                // ONNX Runtime's output length: the product in f32, truncated.
                let out = (ax[a].input as f32 * s[j] as f32).floor();
                if !(1.0..=1e9).contains(&out) {
                    return Err(n.err(format!(
                        "scale {} makes axis {a} of length {} empty or too large",
                        s[j], ax[a].input
                    )));
                }
                ax[a].output = out as usize;
                ax[a].scale = s[j];
            }
        }
        (None, Some(z)) => {
            if z.len() != k {
                return Err(n.err(format!("sizes has {} values for {k} axes", z.len())));
            }
            if z.iter().any(|&v| !(1..=1_000_000_000).contains(&v)) {
                return Err(n.err(format!("sizes {z:?} must be positive")));
            }
            let ratio = |j: usize| z[j] as f64 / shape[axes[j]] as f64;
            let common = match policy.as_str() {
                "stretch" => None,
                "not_larger" => Some((0..k).map(ratio).fold(f64::INFINITY, f64::min)),
                "not_smaller" => Some((0..k).map(ratio).fold(0.0, f64::max)),
                other => {
                    return Err(n.attr_err(
                        "keep_aspect_ratio_policy",
                        format!("`{other}` is not stretch, not_larger or not_smaller"),
                    ));
                }
            };
            for (j, &a) in axes.iter().enumerate() {
                match common {
                    None => {
                        ax[a].output = z[j] as usize;
                        ax[a].scale = ratio(j);
                    }
                    Some(s) => {
                        ax[a].output = ((s * ax[a].input as f64) + 0.5).floor().max(1.0) as usize;
                        ax[a].scale = s;
                    }
                }
            }
        }
    }
    if shape.contains(&0) {
        return Err(n.err(format!(
            "input 0 has shape {shape:?}, with no elements to resize"
        )));
    }
    emit(n, x, mode, coord, &ax, extrapolation)
}

/// Adds the gathers, weights and sums that resize `x` along every axis of `ax` that
/// changes, the last of them as the node's output.
fn emit(
    n: &mut dyn OnnxNode,
    x: TensorId,
    mode: Mode,
    coord: Coord,
    ax: &[Axis],
    extrapolation: f64,
) -> Result<(), OnnxError> {
    let r = ax.len();
    let dtype = n.tensor(x).dtype;
    if !dtype.is_float() && !matches!(mode, Mode::Nearest(_)) {
        // The weights would be integers too: only a pick of inputs keeps the type.
        return Err(n.err(format!(
            "input 0 is {dtype:?}: weft interpolates float tensors (nearest takes any)"
        )));
    }
    type Table = Vec<Option<Vec<(usize, f64)>>>;
    let resized: Vec<(usize, Table)> = ax
        .iter()
        .enumerate()
        .map(|(d, a)| {
            (
                d,
                (0..a.output)
                    .map(|i| taps(mode, coord, a, i))
                    .collect::<Table>(),
            )
        })
        .filter(|(d, table)| !is_identity(&ax[*d], table))
        .collect();
    if resized.is_empty() {
        return n.emit(Op::Identity, vec![x]);
    }
    let last_axis = resized.last().map(|(d, _)| *d);
    // Each op as a step, or the node's output where it is the last.
    let put = |n: &mut dyn OnnxNode, last: bool, tag: String, op: Op, inputs: Vec<TensorId>| {
        if last {
            n.emit(op, inputs).map(|()| x)
        } else {
            n.step(&tag, op, inputs)
        }
    };
    let mut y = x;
    for (d, table) in resized {
        let a = ax[d];
        let last_axis = Some(d) == last_axis;
        let outside = table.iter().any(Option::is_none);
        let count = table.iter().flatten().map(Vec::len).max().unwrap_or(1);
        // Weights and masks broadcast along `d`: `[out, 1, ..., 1]`.
        let mut bshape = vec![a.output];
        bshape.extend(std::iter::repeat_n(1, r - 1 - d));
        let mut sum: Option<TensorId> = None;
        for tap in 0..count {
            let last = last_axis && !outside && tap + 1 == count;
            let idx: Vec<f32> = table
                .iter()
                .map(|t| t.as_ref().map_or(0, |t| t[tap].0) as f32)
                .collect();
            let idx = n.add_constant(
                &format!("axis{d}_index{tap}"),
                vec![a.output],
                idx,
                DType::I32,
            );
            let nearest = matches!(mode, Mode::Nearest(_));
            let gather = Op::Gather(Gather { axis: d });
            let g = put(
                n,
                last && nearest,
                format!("axis{d}_gather{tap}"),
                gather,
                vec![y, idx],
            )?;
            let term = if nearest {
                g
            } else {
                let w: Vec<f32> = table
                    .iter()
                    .map(|t| t.as_ref().map_or(0.0, |t| t[tap].1) as f32)
                    .collect();
                let w = n.add_constant(&format!("axis{d}_weight{tap}"), bshape.clone(), w, dtype);
                let mul = Op::Binary(Binary::Mul);
                put(
                    n,
                    last && tap == 0,
                    format!("axis{d}_term{tap}"),
                    mul,
                    vec![g, w],
                )?
            };
            sum = Some(match sum {
                None => term,
                Some(s) => {
                    let add = Op::Binary(Binary::Add);
                    put(n, last, format!("axis{d}_sum{tap}"), add, vec![s, term])?
                }
            });
        }
        y = sum.expect("every position has a tap");
        if outside {
            let mask: Vec<f32> = table
                .iter()
                .map(|t| if t.is_none() { 1.0 } else { 0.0 })
                .collect();
            let mask = n.add_constant(&format!("axis{d}_outside"), bshape, mask, DType::Bool);
            let e = vec![extrapolation as f32];
            let e = n.add_constant(&format!("axis{d}_extrapolation"), vec![], e, dtype);
            y = put(
                n,
                last_axis,
                format!("axis{d}_crop"),
                Op::Where,
                vec![mask, e, y],
            )?;
        }
    }
    Ok(())
}

/// True where every output position of the axis reads its own index with weight 1.
fn is_identity(a: &Axis, table: &[Option<Vec<(usize, f64)>>]) -> bool {
    a.input == a.output
        && table.iter().enumerate().all(|(i, t)| {
            t.as_ref().is_some_and(|t| {
                t.iter().any(|&(j, w)| j == i && w == 1.0)
                    && t.iter().all(|&(j, w)| j == i || w == 0.0)
            })
        })
}

/// ONNX's Upsample (9): nearest or linear, `asymmetric` coordinates, scales as input 1.
pub(in crate::op) fn import_upsample(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    if n.opset() >= 10 {
        return Err(n.err(format!(
            "Upsample is deprecated from opset 10 (the model's is {}): Resize replaces it",
            n.opset()
        )));
    }
    let x = n.data(0)?;
    let shape = n.shape(x);
    let mode = match n.string("mode", "nearest")?.as_str() {
        "nearest" => Mode::Nearest(Round::Floor),
        "linear" | "bilinear" => Mode::Linear,
        other => return Err(n.attr_err("mode", format!("`{other}` is not nearest or linear"))),
    };
    let scales = match n.constant(1)? {
        Some(c) => match c.values {
            ConstValues::Floats(v) => v,
            ConstValues::Ints(_) => return Err(n.err("input 1 (scales) is not a float tensor")),
        },
        None => return Err(n.err("input 1 (scales) is missing")),
    };
    if scales.len() != shape.len() {
        return Err(n.err(format!(
            "scales has {} values for rank {}",
            scales.len(),
            shape.len()
        )));
    }
    let mut ax = Vec::with_capacity(shape.len());
    for (&d, &s) in shape.iter().zip(&scales) {
        let out = (d as f32 * s as f32).floor();
        if !(s >= 1.0 && s.is_finite() && (1.0..=1e9).contains(&out)) {
            return Err(n.err(format!("scales {scales:?} must be at least 1 and finite")));
        }
        ax.push(Axis {
            input: d,
            output: out as usize,
            scale: s,
            roi: (0.0, 1.0),
        });
    }
    emit(n, x, mode, Coord::Asymmetric, &ax, 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AX: Axis = Axis {
        input: 4,
        output: 8,
        scale: 2.0,
        roi: (0.0, 1.0),
    };

    #[test]
    fn nearest_breaks_ties_as_named() {
        // Asymmetric at scale 2: output 1 reads coordinate 0.5, a tie.
        let pick = |r| taps(Mode::Nearest(r), Coord::Asymmetric, &AX, 1).unwrap()[0].0;
        assert_eq!(pick(Round::PreferFloor), 0);
        assert_eq!(pick(Round::PreferCeil), 1);
        assert_eq!(pick(Round::Floor), 0);
        assert_eq!(pick(Round::Ceil), 1);
        // Output 2 reads coordinate 1 exactly: every mode picks it.
        let exact = taps(Mode::Nearest(Round::Ceil), Coord::Asymmetric, &AX, 2).unwrap();
        assert_eq!(exact, [(1, 1.0)]);
    }

    #[test]
    fn linear_and_cubic_weights_sum_to_one_and_clamp_at_the_edge() {
        // half_pixel at scale 2: output 0 reads -0.25, both taps clamped to input 0.
        let t = taps(Mode::Linear, Coord::HalfPixel, &AX, 0).unwrap();
        assert_eq!(t, [(0, 0.25), (0, 0.75)]);
        for exclude_outside in [false, true] {
            let cubic = Mode::Cubic {
                a: -0.75,
                exclude_outside,
            };
            for i in 0..AX.output {
                let t = taps(cubic, Coord::HalfPixel, &AX, i).unwrap();
                let sum: f64 = t.iter().map(|(_, w)| w).sum();
                assert!((sum - 1.0).abs() < 1e-12, "{i}: {t:?}");
                assert!(t.iter().all(|&(j, _)| j < AX.input));
            }
        }
        // tf_crop_and_resize outside the region: the extrapolation value.
        let crop = Axis {
            roi: (-0.5, 0.5),
            ..AX
        };
        assert!(taps(Mode::Linear, Coord::TfCropAndResize, &crop, 0).is_none());
    }
}
