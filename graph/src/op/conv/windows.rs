//! Convolutions of 1, 2 and 3 spatial dimensions as weft's 2-D [`Conv`]: 1-D on
//! `[N, C, 1, L]`; 3-D by gathering, for each of the `kd` depth taps, the input's depth
//! slices every output depth reads (zero where they fall in the padding), stacking the
//! taps along channels (group-major, so each group's channels stay together), folding
//! the output depth into the batch, and one 2-D convolution with the weight rearranged
//! to `[K, kd · C/g, kh, kw]` — exact, the sum over depth taps becoming part of the sum
//! over channels.

use weft_ir::dtype::DType;

use super::Conv;
use crate::op::onnx::{OnnxError, OnnxNode};
use crate::op::shapes::window_out;
use crate::op::{Gather, Op, Reshape, Transpose};
use crate::tensor::TensorId;

/// A convolution's geometry in `dims` spatial dimensions (ONNX's attributes, resolved).
#[derive(Clone, Debug)]
pub(in crate::op) struct Geometry {
    pub strides: Vec<usize>,
    /// The padding at the beginning of each dimension, then at the end.
    pub pads: Vec<usize>,
    pub dilations: Vec<usize>,
    pub groups: usize,
}

/// Adds the convolution of `x` (`[N, C, spatial...]`) by `w` (`[K, C/g, kernel...]`)
/// with `bias`; its last node is the ONNX node's output where `last`, else a step.
/// Returns the result (`x` where it was emitted as the output).
pub(in crate::op) fn convolve(
    n: &mut dyn OnnxNode,
    x: TensorId,
    w: TensorId,
    bias: Option<TensorId>,
    geo: &Geometry,
    last: bool,
) -> Result<TensorId, OnnxError> {
    let (xs, ws) = (n.shape(x), n.shape(w));
    let dims = geo.strides.len();
    let put = |n: &mut dyn OnnxNode, end: bool, tag: &str, op: Op, inputs: Vec<TensorId>| {
        if end && last {
            n.emit(op, inputs).map(|()| x)
        } else {
            n.step(tag, op, inputs)
        }
    };
    let reshape = |shape: Vec<usize>| Op::Reshape(Reshape { shape });
    let with_bias = |mut v: Vec<TensorId>| {
        v.extend(bias);
        v
    };
    let (s, p, d) = (&geo.strides, &geo.pads, &geo.dilations);
    if dims == 2 {
        let conv = Conv {
            strides: [s[0], s[1]],
            pads: [p[0], p[1], p[2], p[3]],
            dilations: [d[0], d[1]],
            groups: geo.groups,
        };
        put(n, true, "conv_2d", Op::Conv(conv), with_bias(vec![x, w]))
    } else if dims == 1 {
        // `[N, C, L]` as `[N, C, 1, L]`, the filter `[K, C/g, k]` as `[K, C/g, 1, k]`,
        // the output `[N, K, 1, OL]` back to `[N, K, OL]`.
        let conv = Conv {
            strides: [1, s[0]],
            pads: [0, p[0], 0, p[1]],
            dilations: [1, d[0]],
            groups: geo.groups,
        };
        let high = |s: &[usize]| reshape(vec![s[0], s[1], 1, s[2]]);
        let x2 = n.step("as_2d", high(&xs), vec![x])?;
        let w2 = n.step("weights_2d", high(&ws), vec![w])?;
        let y2 = n.step("conv_2d", Op::Conv(conv), with_bias(vec![x2, w2]))?;
        let ys = n.shape(y2);
        put(
            n,
            true,
            "as_1d",
            reshape(vec![ys[0], ys[1], ys[3]]),
            vec![y2],
        )
    } else {
        let (nb, c, depth, h, wd) = (xs[0], xs[1], xs[2], xs[3], xs[4]);
        let (k, cg, kd) = (ws[0], ws[1], ws[2]);
        let g = geo.groups;
        if g == 0 || c % g != 0 || cg * g != c || k % g != 0 {
            return Err(n.err(format!(
                "the weights {ws:?} do not convolve an input of {c} channels in {g} groups"
            )));
        }
        let Some(od) = window_out(depth, kd, s[0], d[0], p[0], p[3], false) else {
            return Err(n.err(format!(
                    "the depth-{kd} kernel (dilation {}, stride {}) does not fit depth {depth} padded by {} and {}",
                    d[0], s[0], p[0], p[3]
                )));
        };
        // Tap t of output depth o reads input depth o·s + t·d − pad.
        let mut idx = Vec::with_capacity(kd * od);
        let mut inside = Vec::with_capacity(kd * od);
        for t in 0..kd {
            for o in 0..od {
                let z = (o * s[0] + t * d[0]) as i64 - p[0] as i64;
                let ok = (0..depth as i64).contains(&z);
                idx.push(z.clamp(0, depth as i64 - 1) as f32);
                inside.push(if ok { 1.0 } else { 0.0 });
            }
        }
        let flat = n.step("flat_hw", reshape(vec![nb, c, depth, h * wd]), vec![x])?;
        let idx = n.add_constant("depth_taps", vec![kd, od], idx, DType::I32);
        let mut taps = n.step("taps", Op::Gather(Gather { axis: 2 }), vec![flat, idx])?;
        if inside.contains(&0.0) {
            let dtype = n.tensor(x).dtype;
            let mask = n.add_constant("depth_inside", vec![kd, od, 1], inside, DType::Bool);
            let zero = n.add_constant("zero", vec![], vec![0.0], dtype);
            taps = n.step("padded_taps", Op::Where, vec![mask, taps, zero])?;
        }
        // [N, g, C/g, kd, OD, HW] → [N, OD, g, kd, C/g, HW] → [N·OD, g·kd·C/g, H, W].
        let split = n.step(
            "groups",
            reshape(vec![nb, g, cg, kd, od, h * wd]),
            vec![taps],
        )?;
        let perm = Op::Transpose(Transpose {
            perm: vec![0, 4, 1, 3, 2, 5],
        });
        let moved = n.step("depth_to_batch", perm, vec![split])?;
        let x2 = n.step("as_2d", reshape(vec![nb * od, c * kd, h, wd]), vec![moved])?;
        // [K, C/g, kd, kh, kw] → [K, kd, C/g, kh, kw] → [K, kd·C/g, kh, kw].
        let perm = Op::Transpose(Transpose {
            perm: vec![0, 2, 1, 3, 4],
        });
        let wt = n.step("weights_taps", perm, vec![w])?;
        let w2 = n.step(
            "weights_2d",
            reshape(vec![k, kd * cg, ws[3], ws[4]]),
            vec![wt],
        )?;
        let conv = Conv {
            strides: [s[1], s[2]],
            pads: [p[1], p[2], p[4], p[5]],
            dilations: [d[1], d[2]],
            groups: g,
        };
        let y2 = n.step("conv_2d", Op::Conv(conv), with_bias(vec![x2, w2]))?;
        let ys = n.shape(y2);
        let (oh, ow) = (ys[2], ys[3]);
        // [N·OD, K, OH, OW] → [N, OD, K, OH·OW] → [N, K, OD, OH·OW] → [N, K, OD, OH, OW].
        let y = n.step(
            "batch_to_depth",
            reshape(vec![nb, od, k, oh * ow]),
            vec![y2],
        )?;
        let perm = Op::Transpose(Transpose {
            perm: vec![0, 2, 1, 3],
        });
        let y = n.step("depth_back", perm, vec![y])?;
        put(n, true, "as_3d", reshape(vec![nb, k, od, oh, ow]), vec![y])
    }
}
