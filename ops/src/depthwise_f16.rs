//! `depthwise-conv2d-f16`: the depthwise convolution as weft's models run it in f16 —
//! an f16 NHWC input `x[b, h, w, c]`, an f16 HWIO filter `w[k, k, 1, c]` (the layout
//! of the other NHWC convolution workloads, which cuDNN's reference row reads as KRSC),
//! an f16 NHWC output, f32 sums; "same" padding, any stride. Schedules:
//!
//! - `tuned`: the depthwise template over views of the placeholders, channels fastest
//!   ([`weft_kernels::depthwise::build_f16_nhwc`]), with the template's space;
//! - `direct`: the te definition, one thread per output element, channels fastest (what
//!   the model compiler ran depthwise convolutions in f16 as before the template took
//!   them): the baseline.

use ndarray::ArrayD;
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;
use weft_kernels::conv::one_thread_per_element;

use crate::depthwise::{self, out_size};
use crate::{Definition, OpSpec, Shape};

/// ConvNeXt-tiny's depthwise convolutions (7×7, stride 1) and EfficientNet-B0's (3×3
/// and 5×5, strides 1 and 2) at batch 1, and the largest of each at batch 8.
pub const BENCH: &[&[i64]] = &[
    &[1, 96, 56, 56, 7, 1],
    &[1, 192, 28, 28, 7, 1],
    &[1, 384, 14, 14, 7, 1],
    &[1, 768, 7, 7, 7, 1],
    &[1, 32, 112, 112, 3, 1],
    &[1, 96, 112, 112, 3, 2],
    &[1, 144, 56, 56, 3, 1],
    &[1, 144, 56, 56, 5, 2],
    &[1, 240, 28, 28, 5, 1],
    &[1, 240, 28, 28, 3, 2],
    &[1, 480, 14, 14, 3, 1],
    &[1, 480, 14, 14, 5, 1],
    &[1, 672, 14, 14, 5, 1],
    &[1, 672, 14, 14, 5, 2],
    &[1, 1152, 7, 7, 5, 1],
    &[1, 1152, 7, 7, 3, 1],
    &[8, 96, 56, 56, 7, 1],
    &[8, 144, 56, 56, 5, 2],
];

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "depthwise-conv2d-f16",
    summary: "depthwise 2-D convolution, fp16 NHWC input, HWIO filter, fp32 sums, zero padding (K-1)/2, any stride",
    dims: depthwise::SPEC.dims,
    schedules: &["direct", "tuned"],
    best: "tuned",
    bench: BENCH,
    small: &[
        &[2, 97, 13, 17, 7, 1],
        &[1, 3, 7, 7, 5, 2],
        &[1, 96, 9, 11, 3, 2],
    ],
    template: Some(&crate::templates::DEPTHWISE_F16),
    seed: "000",
    zero_ok: &[],
    check: crate::any_shape,
    define,
    apply,
    reference,
    rounding_growth: 1.0,
    row_reference: None,
};

fn define(shape: &Shape) -> Result<Definition, TeError> {
    let g = |n: &str| shape.get(n);
    let (b, c, h, w, k, stride) = (g("b"), g("c"), g("h"), g("w"), g("k"), g("stride"));
    let (oh, ow) = out_size(h, w, k, stride);
    let pad = (k - 1) / 2;
    let x = te::placeholder("x", &[b, h, w, c], DType::F16);
    let wt = te::placeholder("w", &[k, k, 1, c], DType::F16);
    let (ry, rx) = (te::reduce_axis("ry", k), te::reduce_axis("rx", k));
    let acc = te::compute(
        "y_acc",
        &[("b", b), ("oh", oh), ("ow", ow), ("c", c)],
        |i| {
            let ih = i[1].clone() * stride + ry.expr() - pad;
            let iw = i[2].clone() * stride + rx.expr() - pad;
            let inside = te::all([
                ih.clone().ge(0),
                ih.clone().lt(h),
                iw.clone().ge(0),
                iw.clone().lt(w),
            ]);
            let xv = te::if_then_else(
                inside,
                x.at(&[i[0].clone(), ih, iw, i[3].clone()]).cast(DType::F32),
                0.0f32,
            );
            let wv = wt
                .at(&[ry.expr(), rx.expr(), Expr::int(0), i[3].clone()])
                .cast(DType::F32);
            te::sum(xv * wv, &[&ry, &rx])
        },
    );
    let y = te::compute("y", &[("b", b), ("oh", oh), ("ow", ow), ("c", c)], |i| {
        acc.at(i).cast(DType::F16)
    });
    Ok(Definition {
        func: te::create_func("depthwise_conv2d_f16", [&x, &wt, &y])?,
        inputs: vec![x, wt],
        output: y,
        flops: 2.0 * (b * c * oh * ow * k * k) as f64,
        bytes: 2.0 * (b * c * (h * w + oh * ow) + c * k * k) as f64,
    })
}

/// `direct`: `y_acc` and `y` each one thread per output element.
fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
    if name != "direct" {
        // The template builds `tuned`, not primitives.
        return Ok(());
    }
    for block in ["y_acc", "y"] {
        let b = s.get_block(block)?;
        one_thread_per_element(s, b)?;
    }
    Ok(())
}

/// [`depthwise`]'s reference on NCHW views of the inputs, its result back in NHWC.
fn reference(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    if inputs.len() != 2 || inputs[0].ndim() != 4 || inputs[1].ndim() != 4 {
        return ArrayD::zeros(ndarray::IxDyn(&[0]));
    }
    let x = inputs[0].view().permuted_axes(vec![0, 3, 1, 2]).to_owned();
    let w = inputs[1].view().permuted_axes(vec![3, 2, 0, 1]).to_owned();
    let y = depthwise::reference(&[x, w], shape);
    // In standard order, as the outputs are compared element by element.
    y.view()
        .permuted_axes(vec![0, 2, 3, 1])
        .as_standard_layout()
        .to_owned()
}
