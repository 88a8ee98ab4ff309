//! fp16 convolutions on matrix units (seed 004's implicit GEMM): `conv2d-f16` (NHWC
//! input, HWIO filter, NHWC output), `conv2d-f16-bias-relu` (the same with the folded
//! BatchNorm bias and ReLU) and `conv2d-f16-nchw` (NCHW input, OIHW filter, NCHW output);
//! fp16 inputs and output, fp32 accumulation, any N, C, H, W, K, R, S, stride and padding.
//!
//! Schedules:
//! - `implicit-gemm`: the implicit-GEMM template ([`weft_kernels::implicit_gemm`])
//!   anchored on the fp16 matmul template ([`weft_kernels::matmul_f16`]): one fused
//!   kernel, channels innermost in NHWC so that 16-byte loads fetch 8 channels;
//! - `direct`: the te definition, one thread per output element (f32 sums into a
//!   temporary, then the fp16 result): the baseline.
//!
//! Edges (padding, sizes that fit no tile, `C·R·S` not a multiple of the k step) are
//! zero-filled where the tiles enter shared memory, so the fragments only see whole
//! tiles: the wrong results at sizes that are not multiples of 16 of seed 004's direct
//! `wmma` kernel cannot happen here.

use ndarray::ArrayD;
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;

use weft_kernels::conv::{
    Variant, filter, finish, input, one_thread_per_element, out_axes, placeholders,
};

use crate::conv::{self, Dims};
use crate::conv2d;
use crate::templates;
use crate::{Definition, OpSpec, Shape};

/// Odd sizes: strided, padded, channels and sizes that fit no tile, a 1×1 kernel, and
/// channels that are a multiple of 8 (the vector path) at a size no tile divides.
const SMALL: &[&[i64]] = &[
    &[2, 3, 17, 19, 5, 3, 3, 2, 1],
    &[1, 5, 9, 7, 3, 3, 2, 1, 0],
    &[1, 16, 11, 13, 24, 3, 3, 1, 1],
    &[3, 8, 5, 5, 17, 1, 1, 1, 0],
];

/// Seed 003's six shapes and ResNet-50's (8, 64, 56, 64) and (32, 128, 28, 128), 3×3.
const BENCH: &[&[i64]] = &[
    conv2d::BENCH[0],
    conv2d::BENCH[1],
    conv2d::BENCH[2],
    conv2d::BENCH[3],
    conv2d::BENCH[4],
    conv2d::BENCH[5],
    &[8, 64, 56, 56, 64, 3, 3, 1, 1],
    &[32, 128, 28, 28, 128, 3, 3, 1, 1],
];

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "conv2d-f16",
    summary: "2-D convolution on tensor cores, fp16 NHWC input, HWIO filter, fp32 accumulation",
    dims: conv2d::DIMS,
    schedules: &["direct", "implicit-gemm"],
    best: "implicit-gemm",
    bench: BENCH,
    small: SMALL,
    seed: "003, 004",
    template: Some(&templates::CONV2D_F16),
    zero_ok: &["pad"],
    check: conv::check,
    define,
    apply,
    reference,
    rounding_growth: 1.0,
    row_reference: None,
};

pub(crate) const BIAS_RELU_SPEC: OpSpec = OpSpec {
    name: "conv2d-f16-bias-relu",
    summary: "relu(conv2d(x, w) + bias[k]) on tensor cores, fp16 NHWC, one fused kernel",
    template: Some(&templates::CONV2D_F16_BIAS_RELU),
    seed: "002, 004",
    define: define_bias_relu,
    reference: reference_bias_relu,
    ..SPEC
};

pub(crate) const NCHW_SPEC: OpSpec = OpSpec {
    name: "conv2d-f16-nchw",
    summary: "2-D convolution on tensor cores, fp16 NCHW input, OIHW filter, fp32 accumulation",
    template: Some(&templates::CONV2D_F16_NCHW),
    define: define_nchw,
    reference: reference_nchw,
    ..SPEC
};

/// The te definition of an fp16 variant: f32 sums of fp16 products, then the fp16
/// output.
fn define_variant(shape: &Shape, v: &Variant) -> Result<Definition, TeError> {
    let d = Dims::of(shape);
    let g = d.geometry();
    let (x, w, b) = placeholders(&g, v);
    let (rc, rr, rs) = (
        te::reduce_axis("rc", d.c),
        te::reduce_axis("rr", d.r),
        te::reduce_axis("rs", d.s),
    );
    let (axes, [pn, pk, poh, pow]) = out_axes(&g, v.layout);
    let acc = te::compute("y_acc", &axes, |i| {
        let px = g.window(
            [
                i[pn].clone(),
                rc.expr(),
                i[poh].clone(),
                i[pow].clone(),
                rr.expr(),
                rs.expr(),
            ],
            x.dtype(),
            |at| input(&x, v.layout, at),
        );
        let wt = filter(
            &w,
            v.layout,
            [i[pk].clone(), rc.expr(), rr.expr(), rs.expr()],
        );
        te::sum(px.cast(DType::F32) * wt.cast(DType::F32), &[&rc, &rr, &rs])
    });
    let y = te::compute("y", &axes, |i| finish(acc.at(i), b.as_ref(), &i[pk]));
    let mut inputs = vec![x, w];
    inputs.extend(b);
    let mut params: Vec<&Buffer> = inputs.iter().collect();
    params.push(&y);
    let out_elems = d.n * d.k * d.oh * d.ow;
    Ok(Definition {
        func: te::create_func(v.name, params)?,
        inputs: inputs.clone(),
        output: y,
        flops: 2.0 * (out_elems * d.c * d.r * d.s) as f64,
        bytes: 2.0
            * (d.n * d.c * d.h * d.w
                + d.k * d.c * d.r * d.s
                + out_elems
                + if v.bias { d.k } else { 0 }) as f64,
    })
}

/// `conv2d-f16`'s definition.
fn define(shape: &Shape) -> Result<Definition, TeError> {
    define_variant(shape, &conv::CONV2D_F16)
}

fn define_bias_relu(shape: &Shape) -> Result<Definition, TeError> {
    define_variant(shape, &conv::CONV2D_F16_BIAS_RELU)
}

fn define_nchw(shape: &Shape) -> Result<Definition, TeError> {
    define_variant(shape, &conv::CONV2D_F16_NCHW)
}

/// `direct`: `y_acc` and `y` each one thread per output element.
fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
    if name != "direct" {
        // The implicit GEMM is built by its template, not by primitives.
        return Ok(());
    }
    for block in ["y_acc", "y"] {
        let b = s.get_block(block)?;
        one_thread_per_element(s, b)?;
    }
    Ok(())
}

/// `conv2d-f16`'s reference: [`conv::reference`] on NCHW/OIHW views of the inputs.
fn reference(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    conv::reference(inputs, shape, &conv::CONV2D_F16)
}

fn reference_bias_relu(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    conv::reference(inputs, shape, &conv::CONV2D_F16_BIAS_RELU)
}

fn reference_nchw(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    conv::reference(inputs, shape, &conv::CONV2D_F16_NCHW)
}
