//! Grouped convolutions (`1 < g`, ResNeXt's and RegNet's 3×3s): `grouped-conv2d` (f32,
//! NCHW input, `[K, C/G, R, S]` filter, NCHW output) and `grouped-conv2d-f16` (f16 NHWC
//! input, `[R, S, C/G, K]` filter, NHWC output, f32 sums); any N, C, H, W, K, R, S,
//! stride, padding and group count `g` dividing C and K.
//!
//! Schedules:
//! - `implicit-gemm`: [`weft_kernels::grouped_conv`], an implicit GEMM per group (narrow
//!   groups packed into block-diagonal products) on the matmul templates' batched form,
//!   the product index a grid dimension — what the whole-model compiler runs for a
//!   grouped Conv;
//! - `direct`: the te definition, one thread per output element (what the model ran
//!   before): the baseline.

use ndarray::{ArrayD, Ix4, IxDyn};
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;
use weft_kernels::conv::{Layout, Variant, finish, input, one_thread_per_element, out_axes};

use crate::conv::{Dims, GROUPED, GROUPED_F16, geometry_grouped as geometry, groups};
use crate::templates;
use crate::{Definition, OpSpec, Shape};

/// The shape parameters: a convolution's, and the groups.
pub(crate) const DIMS: &[(&str, i64)] = &[
    ("n", 1),
    ("c", 128),
    ("h", 56),
    ("w", 56),
    ("k", 128),
    ("r", 3),
    ("s", 3),
    ("stride", 1),
    ("pad", 1),
    ("g", 32),
];

/// Odd sizes: 2, 3, 13 and 32 groups of 4, 13 and 8 channels, strided, sizes no tile
/// divides, batch 2.
const SMALL: &[&[i64]] = &[
    &[2, 8, 9, 7, 8, 3, 3, 1, 1, 2],
    &[1, 39, 11, 10, 15, 3, 3, 2, 1, 3],
    &[1, 128, 7, 9, 128, 3, 3, 1, 1, 32],
    &[1, 104, 9, 9, 104, 3, 3, 2, 1, 13],
];

/// ResNeXt-50 32×4d's grouped 3×3s at batch 1.
const BENCH: &[&[i64]] = &[
    &[1, 128, 56, 56, 128, 3, 3, 1, 1, 32],
    &[1, 256, 56, 56, 256, 3, 3, 2, 1, 32],
    &[1, 256, 28, 28, 256, 3, 3, 1, 1, 32],
    &[1, 512, 28, 28, 512, 3, 3, 2, 1, 32],
    &[1, 512, 14, 14, 512, 3, 3, 1, 1, 32],
    &[1, 1024, 14, 14, 1024, 3, 3, 2, 1, 32],
    &[1, 1024, 7, 7, 1024, 3, 3, 1, 1, 32],
];

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "grouped-conv2d",
    summary: "grouped 2-D convolution (1 < g), f32 NCHW input, [K, C/G, R, S] filter",
    dims: DIMS,
    schedules: &["direct", "implicit-gemm"],
    best: "implicit-gemm",
    bench: BENCH,
    small: SMALL,
    seed: "issue 59",
    template: Some(&templates::GROUPED_CONV2D),
    zero_ok: &["pad"],
    check,
    define,
    apply,
    reference,
    rounding_growth: 1.0,
    row_reference: None,
};

pub(crate) const F16_SPEC: OpSpec = OpSpec {
    name: "grouped-conv2d-f16",
    summary: "grouped 2-D convolution (1 < g) on tensor cores, f16 NHWC input, [R, S, C/G, K] filter, f32 sums",
    template: Some(&templates::GROUPED_CONV2D_F16),
    define: define_f16,
    reference: reference_f16,
    ..SPEC
};

/// The groups divide the channels, and the window fits the padded input.
fn check(shape: &Shape) -> Result<(), String> {
    let (d, g) = (Dims::of(shape), groups(shape));
    if g < 2 || d.c % g != 0 || d.k % g != 0 {
        return Err(format!(
            "g = {g} must be at least 2 and divide c = {} and k = {}",
            d.c, d.k
        ));
    }
    crate::conv::check(shape)
}

/// The te definition of variant `v`: f32 sums of the group's products, then the output
/// in the variant's type.
fn define_variant(shape: &Shape, v: &Variant) -> Result<Definition, TeError> {
    let (d, g) = (Dims::of(shape), groups(shape));
    let geo = geometry(shape);
    let (cg, kg) = (geo.c, d.k / g);
    let (x, w) = match v.layout {
        Layout::Nhwc => (
            te::placeholder("x", &[d.n, d.h, d.w, d.c], v.dtype),
            te::placeholder("w", &[d.r, d.s, cg, d.k], v.dtype),
        ),
        Layout::Nchw => (
            te::placeholder("x", &[d.n, d.c, d.h, d.w], v.dtype),
            te::placeholder("w", &[d.k, cg, d.r, d.s], v.dtype),
        ),
    };
    let (rc, rr, rs) = (
        te::reduce_axis("rc", cg),
        te::reduce_axis("rr", d.r),
        te::reduce_axis("rs", d.s),
    );
    let (axes, [pn, pk, poh, pow]) = out_axes(&geo, v.layout);
    let acc = te::compute("y_acc", &axes, |i| {
        let ch = i[pk].clone() / kg * cg + rc.expr();
        let at = [
            i[pn].clone(),
            ch,
            i[poh].clone(),
            i[pow].clone(),
            rr.expr(),
            rs.expr(),
        ];
        let px = geo.window(at, v.dtype, |at| input(&x, v.layout, at));
        let wt = weft_kernels::conv::filter(
            &w,
            v.layout,
            [i[pk].clone(), rc.expr(), rr.expr(), rs.expr()],
        );
        te::sum(px.cast(DType::F32) * wt.cast(DType::F32), &[&rc, &rr, &rs])
    });
    let y = te::compute("y", &axes, |i| match v.dtype {
        DType::F16 => finish(acc.at(i), None, &i[pk]),
        _ => acc.at(i),
    });
    let out_elems = d.n * d.k * d.oh * d.ow;
    let elem = if v.dtype == DType::F16 { 2.0 } else { 4.0 };
    Ok(Definition {
        func: te::create_func(v.name, vec![&x, &w, &y])?,
        inputs: vec![x.clone(), w.clone()],
        output: y,
        flops: 2.0 * (out_elems * cg * d.r * d.s) as f64,
        bytes: elem * (d.n * d.c * d.h * d.w + d.k * cg * d.r * d.s + out_elems) as f64,
    })
}

fn define(shape: &Shape) -> Result<Definition, TeError> {
    define_variant(shape, &GROUPED)
}

fn define_f16(shape: &Shape) -> Result<Definition, TeError> {
    define_variant(shape, &GROUPED_F16)
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

/// The NCHW grouped convolution in float64, loop by loop.
fn reference(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    let (d, g) = (Dims::of(shape), groups(shape));
    let (Some(Ok(x)), Some(Ok(wt))) = (
        inputs
            .first()
            .map(|a| a.view().into_dimensionality::<Ix4>()),
        inputs.get(1).map(|a| a.view().into_dimensionality::<Ix4>()),
    ) else {
        return ArrayD::zeros(IxDyn(&[0]));
    };
    let (cg, kg) = (d.c / g.max(1), d.k / g.max(1));
    let u = |v: i64| v as usize;
    let mut out = ArrayD::<f64>::zeros(IxDyn(&[u(d.n), u(d.k), u(d.oh), u(d.ow)]));
    for n in 0..d.n {
        for k in 0..d.k {
            for oh in 0..d.oh {
                for ow in 0..d.ow {
                    let mut acc = 0.0;
                    for c in 0..cg {
                        for r in 0..d.r {
                            for s in 0..d.s {
                                let (ih, iw) =
                                    (oh * d.stride - d.pad + r, ow * d.stride - d.pad + s);
                                if ih >= 0 && ih < d.h && iw >= 0 && iw < d.w {
                                    acc += x[[u(n), u(k / kg * cg + c), u(ih), u(iw)]]
                                        * wt[[u(k), u(c), u(r), u(s)]];
                                }
                            }
                        }
                    }
                    out[[u(n), u(k), u(oh), u(ow)]] = acc;
                }
            }
        }
    }
    out
}

/// `grouped-conv2d-f16`'s reference: [`reference`] on NCHW/`[K, C/G, R, S]` views of
/// the inputs, seen NHWC.
fn reference_f16(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    if inputs.len() < 2 || inputs[0].ndim() != 4 || inputs[1].ndim() != 4 {
        return ArrayD::zeros(IxDyn(&[0]));
    }
    let nchw = [
        inputs[0].clone().permuted_axes(IxDyn(&[0, 3, 1, 2])),
        inputs[1].clone().permuted_axes(IxDyn(&[3, 2, 0, 1])),
    ];
    reference(&nchw, shape)
        .permuted_axes(IxDyn(&[0, 2, 3, 1]))
        .as_standard_layout()
        .into_owned()
}
