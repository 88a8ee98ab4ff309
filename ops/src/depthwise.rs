//! `depthwise-conv2d` with "same" zero padding (seed 000).

use ndarray::{ArrayD, Ix4, IxDyn};
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;

use crate::{Definition, OpSpec, Shape};

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "depthwise-conv2d",
    summary: "depthwise 2-D convolution, K×K kernel, zero padding (K-1)/2, stride 1",
    dims: &[("b", 3), ("c", 4), ("h", 16), ("w", 32), ("k", 7)],
    schedules: &["naive", "v1", "v2", "v3", "v4"],
    best: "v4",
    bench: &[&[3, 4, 16, 32, 7]],
    small: &[&[3, 4, 16, 32, 7]],
    template: None,
    seed: "000",
    zero_ok: &[],
    check: crate::any_shape,
};

/// Seed 000's `base_declaration`.
pub(crate) fn define(shape: &Shape) -> Result<Definition, TeError> {
    let (b, c, h, w, k) = (
        shape.get("b"),
        shape.get("c"),
        shape.get("h"),
        shape.get("w"),
        shape.get("k"),
    );
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
        &[("b", b), ("c", c), ("h", h), ("w", w)],
        |i| {
            te::sum(
                padded.at(&[i[0].clone(), i[1].clone(), &i[2] + &ry, &i[3] + &rx])
                    * ker.at(&[i[1].clone(), Expr::int(0), ry.expr(), rx.expr()]),
                &[&ry, &rx],
            )
        },
    );
    Ok(Definition {
        func: te::create_func("depthwise_conv2d", [&inp, &ker, &out])?,
        inputs: vec![inp, ker],
        output: out,
        flops: 2.0 * (b * c * h * w * k * k) as f64,
        bytes: 4.0 * (2 * b * c * h * w + c * k * k) as f64,
    })
}

pub(crate) fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
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
    let (b, c, h, w, k) = (
        shape.get("b") as usize,
        shape.get("c") as usize,
        shape.get("h") as usize,
        shape.get("w") as usize,
        shape.get("k") as usize,
    );
    let pad = (k - 1) / 2;
    let mut out = ArrayD::<f64>::zeros(IxDyn(&[b, c, h, w]));
    for bi in 0..b {
        for ci in 0..c {
            for y in 0..h {
                for x in 0..w {
                    let mut acc = 0.0;
                    for ry in 0..k {
                        for rx in 0..k {
                            let (iy, ix) =
                                ((y + ry) as i64 - pad as i64, (x + rx) as i64 - pad as i64);
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
