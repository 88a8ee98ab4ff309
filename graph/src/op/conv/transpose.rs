//! ONNX's ConvTranspose (1-D, 2-D, 3-D) as a convolution: the input stuffed with
//! `stride − 1` zeros after each element along each spatial axis (a Where against a
//! constant mask, then a Reshape), cropped where the transposed padding exceeds the
//! kernel's reach, and convolved at stride 1 by the weight with its input and output
//! channels swapped within each group and its window flipped (Reshape, Transpose and a
//! Slice of step −1: constant folding makes it a weight again where the weight is one),
//! padded by `dilation · (k − 1) − pad` (plus `output_padding` at the end).

use weft_ir::dtype::DType;

use super::windows::{Geometry, convolve};
use crate::op::onnx::{MAX_WINDOW, OnnxError, OnnxNode};
use crate::op::{Op, Reshape, Slice, Transpose};

pub(super) fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let w = n.data(1)?;
    let bias = n.opt_data(2)?;
    let (xs, ws) = (n.shape(x), n.shape(w));
    let kernel = super::kernel_of(n, &xs, &ws)?;
    let dims = kernel.len();
    let strides = n.window_ints("strides", dims)?;
    let dilations = n.window_ints("dilations", dims)?;
    let groups = n.int("group", 1)?;
    if !(1..=MAX_WINDOW).contains(&groups) {
        return Err(n.attr_err("group", format!("{groups} is not a positive count")));
    }
    let g = groups as usize;
    let (c, kg) = (xs[1], ws[1]);
    if ws[0] != c || c % g != 0 {
        return Err(n.err(format!(
            "the weights {ws:?} must be [C, K/group, kernel...] for the input's {c} channels in {g} groups"
        )));
    }
    let k_out = kg * g;
    let output_padding = match n.ints("output_padding")? {
        None => vec![0; dims],
        Some(v) if v.len() == dims && v.iter().all(|p| (0..MAX_WINDOW).contains(p)) => {
            v.iter().map(|&p| p as usize).collect()
        }
        Some(v) => {
            return Err(n.attr_err(
                "output_padding",
                format!("{v:?}: weft takes {dims} values in 0..{MAX_WINDOW}"),
            ));
        }
    };
    // The full output length of each axis before padding is taken off.
    let full: Vec<i64> = (0..dims)
        .map(|a| {
            (strides[a] * (xs[2 + a] - 1) + output_padding[a] + dilations[a] * (kernel[a] - 1) + 1)
                as i64
        })
        .collect();
    let auto = n.string("auto_pad", "NOTSET")?;
    let split = |total: i64, upper: bool| {
        // ONNX: SAME_UPPER puts the smaller half first; otherwise the larger half.
        let half = total.div_euclid(2);
        if upper {
            (half, total - half)
        } else {
            (total - half, half)
        }
    };
    let pads: Vec<i64> = if let Some(shape) = n.ints("output_shape")? {
        if shape.len() < dims
            || shape[shape.len() - dims..]
                .iter()
                .any(|&v| !(1..MAX_WINDOW).contains(&v))
        {
            return Err(n.attr_err(
                "output_shape",
                format!("{shape:?}: weft takes the {dims} spatial lengths, each positive"),
            ));
        }
        let shape = &shape[shape.len() - dims..];
        let mut p = vec![0; 2 * dims];
        for a in 0..dims {
            let (lo, hi) = split(full[a] - shape[a], auto == "SAME_UPPER");
            p[a] = lo;
            p[a + dims] = hi;
        }
        p
    } else {
        match auto.as_str() {
            "NOTSET" => match n.ints("pads")? {
                None => vec![0; 2 * dims],
                Some(v) if v.len() == 2 * dims && v.iter().all(|p| (0..MAX_WINDOW).contains(p)) => {
                    v
                }
                Some(v) => {
                    return Err(n.attr_err(
                        "pads",
                        format!("{v:?}: weft takes {} values in 0..{MAX_WINDOW}", 2 * dims),
                    ));
                }
            },
            "VALID" => vec![0; 2 * dims],
            "SAME_UPPER" | "SAME_LOWER" => {
                let mut p = vec![0; 2 * dims];
                for a in 0..dims {
                    let total = full[a] - (xs[2 + a] * strides[a]) as i64;
                    let (lo, hi) = split(total.max(0), auto == "SAME_UPPER");
                    p[a] = lo;
                    p[a + dims] = hi;
                }
                p
            }
            other => {
                return Err(n.attr_err(
                    "auto_pad",
                    format!("`{other}` is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"),
                ));
            }
        }
    };
    for a in 0..dims {
        if full[a] - pads[a] - pads[a + dims] < 1 {
            return Err(n.err(format!(
                "pads {pads:?} leave axis {} of the output empty",
                a + 2
            )));
        }
    }
    let dtype = n.tensor(x).dtype;
    // Zero-stuffing: along each strided axis `[.., L, rest]` → `[.., L, 1, rest]`, a
    // Where against a mask `[s, 1, ...]` true at 0 → `[.., L, s, rest]` → `[.., L·s, rest]`.
    let mut z = x;
    for (a, &s) in strides.iter().enumerate() {
        if s == 1 {
            continue;
        }
        let shape = n.shape(z);
        let ax = 2 + a;
        let mut up = shape[..=ax].to_vec();
        up.push(1);
        up.extend(&shape[ax + 1..]);
        let up = n.step(
            &format!("axis{ax}_split"),
            Op::Reshape(Reshape { shape: up }),
            vec![z],
        )?;
        let mut mshape = vec![s];
        mshape.extend(std::iter::repeat_n(1, shape.len() - ax - 1));
        let mut mask = vec![0.0; s];
        mask[0] = 1.0;
        let mask = n.add_constant(&format!("axis{ax}_stuffing"), mshape, mask, DType::Bool);
        let zero = n.add_constant(&format!("axis{ax}_zero"), vec![], vec![0.0], dtype);
        let stuffed = n.step(
            &format!("axis{ax}_stuffed"),
            Op::Where,
            vec![mask, up, zero],
        )?;
        let mut flat = shape.clone();
        flat[ax] *= s;
        z = n.step(
            &format!("axis{ax}_zeros"),
            Op::Reshape(Reshape { shape: flat }),
            vec![stuffed],
        )?;
    }
    // Padding of the stuffed input: d·(k − 1) − pad at the start; at the end the same
    // plus output_padding, less the s − 1 zeros stuffing left after the last element.
    // Where negative, cropped.
    let shape = n.shape(z);
    let mut conv_pads = vec![0; 2 * dims];
    let mut starts = vec![0; shape.len()];
    let mut sizes = shape.clone();
    for a in 0..dims {
        let reach = (dilations[a] * (kernel[a] - 1)) as i64;
        let lo = reach - pads[a];
        let hi = reach - pads[a + dims] + output_padding[a] as i64 - (strides[a] as i64 - 1);
        let crop_lo = (-lo).max(0) as usize;
        let crop_hi = (-hi).max(0) as usize;
        if crop_lo + crop_hi >= shape[2 + a] {
            return Err(n.err(format!("pads {pads:?} crop all of axis {} away", a + 2)));
        }
        starts[2 + a] = crop_lo;
        sizes[2 + a] -= crop_lo + crop_hi;
        conv_pads[a] = lo.max(0) as usize;
        conv_pads[a + dims] = hi.max(0) as usize;
    }
    if sizes != shape {
        let crop = Slice {
            starts,
            steps: vec![1; shape.len()],
            sizes,
        };
        z = n.step("cropped", Op::Slice(crop), vec![z])?;
    }
    // The weight: [C, K/g, k...] → [g, C/g, K/g, k...] → [g, K/g, C/g, k...] →
    // [K, C/g, k...], each window flipped.
    let cg = c / g;
    let mut grouped = vec![g, cg, kg];
    grouped.extend(&kernel);
    let wg = n.step(
        "weights_groups",
        Op::Reshape(Reshape { shape: grouped }),
        vec![w],
    )?;
    let mut perm = vec![0, 2, 1];
    perm.extend(3..3 + dims);
    let wt = n.step(
        "weights_swapped",
        Op::Transpose(Transpose { perm }),
        vec![wg],
    )?;
    let mut swapped = vec![k_out, cg];
    swapped.extend(&kernel);
    let wr = n.step(
        "weights_oihw",
        Op::Reshape(Reshape {
            shape: swapped.clone(),
        }),
        vec![wt],
    )?;
    let mut starts = vec![0, 0];
    starts.extend(kernel.iter().map(|&k| k - 1));
    let mut steps = vec![1, 1];
    steps.extend(std::iter::repeat_n(-1, dims));
    let flip = Slice {
        starts,
        steps,
        sizes: swapped,
    };
    let wf = n.step("weights_flipped", Op::Slice(flip), vec![wr])?;
    let geo = Geometry {
        strides: vec![1; dims],
        pads: conv_pads,
        dilations,
        groups: g,
    };
    convolve(n, z, wf, bias, &geo, true).map(|_| ())
}
