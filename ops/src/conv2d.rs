//! `conv2d` (NCHW, fp32, stride and zero padding), `conv2d-bias-relu` (the Conv-BN-ReLU
//! of inference, with BatchNorm folded into the bias) and `winograd-conv2d` (the same
//! convolution at 3×3, stride 1, by Winograd's F(2×2, 3×3)).
//!
//! Schedules:
//! - `direct`: the te definition, one thread per output element (`conv2d-bias-relu`:
//!   the convolution, then bias and ReLU as a second kernel);
//! - `implicit-gemm`: the implicit-GEMM template
//!   ([`weft_kernels::implicit_gemm`]) anchored on the fp32 matmul template;
//! - `winograd` (`winograd-conv2d`): the Winograd template
//!   ([`weft_kernels::winograd`]).
//!
//! The pieces every convolution op shares (sizes, variants, the reference) are in
//! [`crate::conv`]; the te pieces are the kernel library's ([`weft_kernels::conv`]), and
//! the window, zero in the padding, is the implicit GEMM's
//! ([`weft_kernels::conv_views`]).

use ndarray::ArrayD;
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;

use weft_kernels::conv::{Layout, Variant, bias_relu, input, one_thread_per_element, placeholders};

use crate::conv::{self, Dims};
use crate::templates;
use crate::{Definition, OpSpec, Shape};

pub(crate) const DIMS: &[(&str, i64)] = &[
    ("n", 1),
    ("c", 64),
    ("h", 56),
    ("w", 56),
    ("k", 64),
    ("r", 3),
    ("s", 3),
    ("stride", 1),
    ("pad", 1),
];

/// Seed 003's six shapes (N, C, size, K; 3×3, stride 1, padding 1).
pub(crate) const BENCH: &[&[i64]] = &[
    &[1, 64, 224, 224, 64, 3, 3, 1, 1],
    &[1, 128, 122, 122, 128, 3, 3, 1, 1],
    &[1, 128, 128, 128, 128, 3, 3, 1, 1],
    &[1, 64, 56, 56, 64, 3, 3, 1, 1],
    &[1, 64, 64, 64, 32, 3, 3, 1, 1],
    &[1, 64, 112, 112, 128, 3, 3, 1, 1],
];

/// Odd sizes: strided, padded, channels and sizes that fit no tile.
const SMALL: &[&[i64]] = &[&[2, 3, 17, 19, 5, 3, 3, 2, 1], &[1, 5, 9, 7, 3, 3, 2, 1, 0]];

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "conv2d",
    summary: "2-D convolution, NCHW, fp32, any kernel size, stride and zero padding",
    dims: DIMS,
    schedules: &["direct", "implicit-gemm"],
    best: "implicit-gemm",
    bench: BENCH,
    small: SMALL,
    seed: "003, 004",
    template: Some(&templates::CONV2D),
    zero_ok: &["pad"],
    check: conv::check,
    define,
    apply,
    reference,
    rounding_growth: 1.0,
    row_reference: None,
};

pub(crate) const BIAS_RELU_SPEC: OpSpec = OpSpec {
    name: "conv2d-bias-relu",
    summary: "relu(conv2d(x, w) + bias[k]): Conv-BN-ReLU with BatchNorm folded into the bias",
    seed: "002, 003",
    template: Some(&templates::CONV2D_BIAS_RELU),
    define: define_bias_relu,
    reference: reference_bias_relu,
    ..SPEC
};

/// `winograd-conv2d`: the 3×3, stride-1 convolution by Winograd's F(2×2, 3×3), with the
/// conv2d op's shape parameters (so that shapes compare one to one), definition and
/// reference, and its `direct` schedule as a baseline.
pub(crate) const WINOGRAD_SPEC: OpSpec = OpSpec {
    name: "winograd-conv2d",
    summary: "3x3 stride-1 conv2d (NCHW, fp32) by Winograd F(2x2,3x3): transforms around 16 batched GEMMs",
    schedules: &["direct", "winograd"],
    best: "winograd",
    small: &[
        &[1, 8, 13, 11, 4, 3, 3, 1, 1],
        &[2, 3, 17, 19, 5, 3, 3, 1, 0],
    ],
    seed: "003",
    template: Some(&templates::WINOGRAD),
    check: check_winograd,
    ..SPEC
};

fn check_winograd(shape: &Shape) -> Result<(), String> {
    let d = Dims::of(shape);
    if (d.r, d.s, d.stride) != (3, 3, 1) {
        return Err(format!(
            "Winograd F(2x2,3x3) takes a 3x3 kernel at stride 1, not {}x{} at stride {}",
            d.r, d.s, d.stride
        ));
    }
    conv::check(shape)
}

/// The te definition of an fp32 NCHW variant: the sum `y`, then (with a bias) `z`.
fn define_variant(shape: &Shape, v: &Variant) -> Result<Definition, TeError> {
    let d = Dims::of(shape);
    let (x, wt, b) = placeholders(&d.geometry(), v);
    let (rc, rr, rs) = (
        te::reduce_axis("rc", d.c),
        te::reduce_axis("rr", d.r),
        te::reduce_axis("rs", d.s),
    );
    let y = te::compute(
        "y",
        &[("n", d.n), ("k", d.k), ("oh", d.oh), ("ow", d.ow)],
        |i| {
            let px = d.geometry().window(
                [
                    i[0].clone(),
                    rc.expr(),
                    i[2].clone(),
                    i[3].clone(),
                    rr.expr(),
                    rs.expr(),
                ],
                x.dtype(),
                |at| input(&x, Layout::Nchw, at),
            );
            te::sum(
                px * wt.at(&[i[1].clone(), rc.expr(), rr.expr(), rs.expr()]),
                &[&rc, &rr, &rs],
            )
        },
    );
    let (inputs, output) = match &b {
        Some(b) => (
            vec![x, wt, b.clone()],
            bias_relu(&y, b, &d.geometry(), Layout::Nchw),
        ),
        None => (vec![x, wt], y),
    };
    let mut params: Vec<&Buffer> = inputs.iter().collect();
    params.push(&output);
    let out_elems = d.n * d.k * d.oh * d.ow;
    Ok(Definition {
        func: te::create_func(v.name, params)?,
        inputs: inputs.clone(),
        output,
        flops: 2.0 * (out_elems * d.c * d.r * d.s) as f64,
        bytes: 4.0
            * (d.n * d.c * d.h * d.w
                + d.k * d.c * d.r * d.s
                + out_elems
                + if v.bias { d.k } else { 0 }) as f64,
    })
}

/// `conv2d`'s (and `winograd-conv2d`'s) definition.
fn define(shape: &Shape) -> Result<Definition, TeError> {
    define_variant(shape, &conv::CONV2D)
}

fn define_bias_relu(shape: &Shape) -> Result<Definition, TeError> {
    define_variant(shape, &conv::CONV2D_BIAS_RELU)
}

/// `direct`: every computed tensor (`y`, and `z` where there is one) one thread per
/// output element.
fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
    match name {
        "direct" => {
            for block in ["y", "z"] {
                let Ok(b) = s.get_block(block) else { continue };
                one_thread_per_element(s, b)?;
            }
            Ok(())
        }
        // The implicit GEMM and Winograd are built by their templates, not by primitives.
        _ => Ok(()),
    }
}

/// `conv2d`'s (and `winograd-conv2d`'s) reference.
fn reference(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    conv::reference(inputs, shape, &conv::CONV2D)
}

fn reference_bias_relu(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    conv::reference(inputs, shape, &conv::CONV2D_BIAS_RELU)
}
