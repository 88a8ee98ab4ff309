//! `depthwise-conv2d` with "same" zero padding (seed 000), stride 1 or more; schedules
//! `naive`, `v1`–`v4` (seed 000's steps) and `tuned`, the depthwise template
//! ([`weft_kernels::depthwise`]) with its schedule space.

use ndarray::{ArrayD, Ix4, IxDyn};
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;

use crate::{Definition, OpSpec, Shape};

/// Seed 000's shape; MobileNetV2's depthwise layers (N = 1, and the 56² layer at N = 8);
/// its two stride-2 layers.
const BENCH: &[&[i64]] = &[
    &[3, 4, 16, 32, 7, 1],
    &[1, 32, 112, 112, 3, 1],
    &[1, 144, 56, 56, 3, 1],
    &[1, 192, 28, 28, 3, 1],
    &[1, 384, 14, 14, 3, 1],
    &[1, 960, 7, 7, 3, 1],
    &[8, 144, 56, 56, 3, 1],
    &[1, 144, 56, 56, 3, 2],
    &[1, 192, 28, 28, 3, 2],
];

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "depthwise-conv2d",
    summary: "depthwise 2-D convolution, K×K kernel, zero padding (K-1)/2, any stride",
    dims: &[
        ("b", 3),
        ("c", 4),
        ("h", 16),
        ("w", 32),
        ("k", 7),
        ("stride", 1),
    ],
    schedules: &["naive", "v1", "v2", "v3", "v4", "tuned"],
    best: "tuned",
    bench: BENCH,
    small: &[
        &[3, 4, 16, 32, 7, 1],
        &[2, 3, 13, 9, 3, 2],
        &[1, 5, 7, 7, 5, 1],
    ],
    template: Some(&crate::templates::DEPTHWISE),
    seed: "000",
    zero_ok: &[],
    check: crate::any_shape,
    define,
    apply,
    reference,
    rounding_growth: 1.0,
    row_reference: None,
};

/// Seed 000's `base_declaration`.
fn define(shape: &Shape) -> Result<Definition, TeError> {
    let (b, c, h, w, k, stride) = (
        shape.get("b"),
        shape.get("c"),
        shape.get("h"),
        shape.get("w"),
        shape.get("k"),
        shape.get("stride"),
    );
    let (oh, ow) = out_size(h, w, k, stride);
    let inp = te::placeholder("A", &[b, c, h, w], DType::F32);
    let ker = te::placeholder("W", &[c, 1, k, k], DType::F32);
    let ry = te::reduce_axis("ry", k);
    let rx = te::reduce_axis("rx", k);
    let (pad_h, pad_w) = ((k - 1) / 2, (k - 1) / 2);
    let padded = te::compute(
        "padded",
        &[
            ("b", b),
            ("c", c),
            ("h", h + 2 * pad_h),
            ("w", w + 2 * pad_w),
        ],
        |i| {
            let (hh, ww) = (i[2].clone(), i[3].clone());
            te::if_then_else(
                te::all([
                    hh.clone().ge(pad_h),
                    hh.clone().lt(h + pad_h),
                    ww.clone().ge(pad_w),
                    ww.clone().lt(w + pad_w),
                ]),
                inp.at(&[i[0].clone(), i[1].clone(), hh - pad_h, ww - pad_w]),
                0.0f32,
            )
        },
    );
    let out = te::compute(
        "depthwise_conv",
        &[("b", b), ("c", c), ("h", oh), ("w", ow)],
        |i| {
            let at = |o: &Expr, r: &IterVar| {
                if stride == 1 {
                    o + r
                } else {
                    o.clone() * stride + r.expr()
                }
            };
            te::sum(
                padded.at(&[i[0].clone(), i[1].clone(), at(&i[2], &ry), at(&i[3], &rx)])
                    * ker.at(&[i[1].clone(), Expr::int(0), ry.expr(), rx.expr()]),
                &[&ry, &rx],
            )
        },
    );
    Ok(Definition {
        func: te::create_func("depthwise_conv2d", [&inp, &ker, &out])?,
        inputs: vec![inp, ker],
        output: out,
        flops: 2.0 * (b * c * oh * ow * k * k) as f64,
        bytes: 4.0 * (b * c * (h * w + oh * ow) + c * k * k) as f64,
    })
}

/// Output rows and columns at "same" padding `(k - 1) / 2` and `stride`.
pub(crate) fn out_size(h: i64, w: i64, k: i64, stride: i64) -> (i64, i64) {
    let pad = (k - 1) / 2;
    (
        (h + 2 * pad - k) / stride + 1,
        (w + 2 * pad - k) / stride + 1,
    )
}

fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
    let out = s.get_block("depthwise_conv")?;
    let padded = s.get_block("padded")?;
    let l = s.get_loops(out)?;
    let (b, c, h, w) = (l[0], l[1], l[2], l[3]);
    match name {
        "naive" => {
            s.bind(b, ThreadAxis::BlockIdxX)?;
        }
        "v1" => {
            s.bind(b, ThreadAxis::BlockIdxX)?;
            s.bind(c, ThreadAxis::BlockIdxY)?;
        }
        "v2" => {
            let bc = s.fuse(&[b, c])?;
            s.bind(bc, ThreadAxis::BlockIdxX)?;
            s.bind(h, ThreadAxis::BlockIdxY)?;
        }
        "v3" => {
            let bc = s.fuse(&[b, c])?;
            let hh = s.split(h, &[None, Some(16)])?;
            let ww = s.split(w, &[None, Some(16)])?;
            s.bind(bc, ThreadAxis::BlockIdxX)?;
            s.bind(hh[0], ThreadAxis::BlockIdxY)?;
            s.bind(hh[1], ThreadAxis::ThreadIdxY)?;
            s.bind(ww[1], ThreadAxis::ThreadIdxX)?;
        }
        _ => {
            let bc = s.fuse(&[b, c])?;
            let hh = s.split(h, &[None, Some(16)])?;
            let ww = s.split(w, &[None, Some(16)])?;
            // Reorder so that the outer height and width loops are adjacent, then fuse.
            s.reorder(&[bc, hh[0], ww[0], hh[1], ww[1]])?;
            let hw = s.fuse(&[hh[0], ww[0]])?;
            s.bind(bc, ThreadAxis::BlockIdxX)?;
            s.bind(hw, ThreadAxis::BlockIdxY)?;
            s.bind(hh[1], ThreadAxis::ThreadIdxY)?;
            s.bind(ww[1], ThreadAxis::ThreadIdxX)?;
        }
    }
    // Compute the padding inline: only when the output needs it.
    s.compute_inline(padded)?;
    Ok(())
}

pub(crate) fn reference(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    let (Ok(a), Ok(wt)) = (
        inputs[0].view().into_dimensionality::<Ix4>(),
        inputs[1].view().into_dimensionality::<Ix4>(),
    ) else {
        return ArrayD::zeros(IxDyn(&[0]));
    };
    let (b, c, h, w, k, stride) = (
        shape.get("b") as usize,
        shape.get("c") as usize,
        shape.get("h") as usize,
        shape.get("w") as usize,
        shape.get("k") as usize,
        shape.get("stride") as usize,
    );
    let pad = (k - 1) / 2;
    let (oh, ow) = out_size(h as i64, w as i64, k as i64, stride as i64);
    let (oh, ow) = (oh as usize, ow as usize);
    let mut out = ArrayD::<f64>::zeros(IxDyn(&[b, c, oh, ow]));
    for bi in 0..b {
        for ci in 0..c {
            for y in 0..oh {
                for x in 0..ow {
                    let mut acc = 0.0;
                    for ry in 0..k {
                        for rx in 0..k {
                            let (iy, ix) = (
                                (y * stride + ry) as i64 - pad as i64,
                                (x * stride + rx) as i64 - pad as i64,
                            );
                            if iy >= 0 && iy < h as i64 && ix >= 0 && ix < w as i64 {
                                acc += a[[bi, ci, iy as usize, ix as usize]] * wt[[ci, 0, ry, rx]];
                            }
                        }
                    }
                    out[[bi, ci, y, x]] = acc;
                }
            }
        }
    }
    out
}
