//! fp16 convolutions on matrix units (seed 004's implicit GEMM): `conv2d-f16` (NHWC
//! input, HWIO filter, NHWC output), `conv2d-f16-bias-relu` (the same with the folded
//! BatchNorm bias and ReLU) and `conv2d-f16-nchw` (NCHW input, OIHW filter, NCHW output);
//! fp16 inputs and output, fp32 accumulation, any N, C, H, W, K, R, S, stride and padding.
//!
//! Schedules:
//! - `implicit-gemm`: the fp16 matmul template ([`crate::templates::matmul_f16`]) over
//!   the im2col view of the input, with the conv's index mapping: GEMM row
//!   `i → (n, oh, ow)`, column `j → k`, reduction `kk`. The im2col and filter views are
//!   prologues and the output layout (with bias and ReLU) an epilogue, fused into the
//!   template's one kernel ([`weft_ir::fusion`]). In NHWC the reduction index runs
//!   `kk → (r, s, c)`, channels innermost, so that where `C` is a multiple of 8 one
//!   16-byte load fetches 8 channels of one input pixel (the padding test is the same
//!   for all of them), and the HWIO filter *is* the `[R·S·C, K]` matrix. In NCHW it runs
//!   `kk → (c, r, s)` and the gathers are scalar: the layout is right at every size and
//!   slower, as in cuDNN, which converts NCHW to NHWC for its tensor-core kernels.
//! - `direct`: the te definition, one thread per output element (f32 sums into a
//!   temporary, then the fp16 result): the baseline.
//!
//! Edges (padding, sizes that fit no tile, `C·R·S` not a multiple of the k step) are
//! zero-filled where the tiles enter shared memory, so the fragments only see whole
//! tiles: the wrong results at sizes that are not multiples of 16 of seed 004's direct
//! `wmma` kernel cannot happen here.

use ndarray::{ArrayD, IxDyn};
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;

use crate::conv2d::{self, Dims, Layout, window};
use crate::templates::matmul_f16::{self, F16Params};
use crate::templates::{BuildError, Config, TemplateSpec};
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
    template: Some(&IMPLICIT_GEMM_NHWC),
    zero_ok: &["pad"],
    check: conv2d::check,
};

pub(crate) const BIAS_RELU_SPEC: OpSpec = OpSpec {
    name: "conv2d-f16-bias-relu",
    summary: "relu(conv2d(x, w) + bias[k]) on tensor cores, fp16 NHWC, one fused kernel",
    template: Some(&IMPLICIT_GEMM_BIAS_RELU),
    seed: "002, 004",
    ..SPEC
};

pub(crate) const NCHW_SPEC: OpSpec = OpSpec {
    name: "conv2d-f16-nchw",
    summary: "2-D convolution on tensor cores, fp16 NCHW input, OIHW filter, fp32 accumulation",
    template: Some(&IMPLICIT_GEMM_NCHW),
    ..SPEC
};

/// Which fp16 conv an op is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Variant {
    pub layout: Layout,
    pub bias: bool,
}

impl Variant {
    pub(crate) fn of(op: &str) -> Variant {
        Variant {
            layout: if op.ends_with("nchw") {
                Layout::Nchw
            } else {
                Layout::Nhwc
            },
            bias: op.ends_with("bias-relu"),
        }
    }

    fn name(&self) -> &'static str {
        match (self.layout, self.bias) {
            (Layout::Nhwc, false) => "conv2d_f16",
            (Layout::Nhwc, true) => "conv2d_f16_bias_relu",
            (Layout::Nchw, _) => "conv2d_f16_nchw",
        }
    }
}

const fn spec_for(build: fn(&Shape, &Config) -> Result<Func, BuildError>) -> TemplateSpec {
    TemplateSpec {
        schedule: "implicit-gemm",
        params: matmul_f16::PARAMS,
        space: matmul_f16::space_over_views,
        default: matmul_f16::default_config,
        describe: matmul_f16::describe,
        build,
    }
}

const IMPLICIT_GEMM_NHWC: TemplateSpec = spec_for(|shape, config| {
    let v = Variant {
        layout: Layout::Nhwc,
        bias: false,
    };
    build(shape, config, v)
});
const IMPLICIT_GEMM_BIAS_RELU: TemplateSpec = spec_for(|shape, config| {
    let v = Variant {
        layout: Layout::Nhwc,
        bias: true,
    };
    build(shape, config, v)
});
const IMPLICIT_GEMM_NCHW: TemplateSpec = spec_for(|shape, config| {
    let v = Variant {
        layout: Layout::Nchw,
        bias: false,
    };
    build(shape, config, v)
});

/// Input, filter and (with a bias) bias placeholders, all f16.
fn placeholders(d: Dims, v: Variant) -> (Buffer, Buffer, Option<Buffer>) {
    let (x, w) = match v.layout {
        Layout::Nhwc => (
            te::placeholder("x", &[d.n, d.h, d.w, d.c], DType::F16),
            te::placeholder("w", &[d.r, d.s, d.c, d.k], DType::F16),
        ),
        Layout::Nchw => (
            te::placeholder("x", &[d.n, d.c, d.h, d.w], DType::F16),
            te::placeholder("w", &[d.k, d.c, d.r, d.s], DType::F16),
        ),
    };
    let b = v.bias.then(|| te::placeholder("bias", &[d.k], DType::F16));
    (x, w, b)
}

/// The output's axes in its layout, and where `(n, k, oh, ow)` sit among them.
fn out_axes(d: Dims, layout: Layout) -> ([(&'static str, i64); 4], [usize; 4]) {
    match layout {
        Layout::Nhwc => (
            [("n", d.n), ("oh", d.oh), ("ow", d.ow), ("k", d.k)],
            [0, 3, 1, 2],
        ),
        Layout::Nchw => (
            [("n", d.n), ("k", d.k), ("oh", d.oh), ("ow", d.ow)],
            [0, 1, 2, 3],
        ),
    }
}

/// The filter element for output channel `k`, input channel `c`, position `(r, s)`.
fn filter(w: &Buffer, layout: Layout, [k, c, r, s]: [Expr; 4]) -> Expr {
    match layout {
        Layout::Nhwc => w.at(&[r, s, c, k]),
        Layout::Nchw => w.at(&[k, c, r, s]),
    }
}

/// What the f32 sum becomes: fp16, after bias and ReLU when there is a bias.
fn finish(acc: Expr, bias: Option<&Buffer>, k: &Expr) -> Expr {
    match bias {
        Some(b) => te::maximum(acc + b.at(&[k]).cast(DType::F32), 0.0f32).cast(DType::F16),
        None => acc.cast(DType::F16),
    }
}

/// The te definition: f32 sums of fp16 products, then the fp16 output.
pub(crate) fn define(shape: &Shape, op: &str) -> Result<Definition, TeError> {
    let v = Variant::of(op);
    let d = Dims::of(shape);
    let (x, w, b) = placeholders(d, v);
    let (rc, rr, rs) = (
        te::reduce_axis("rc", d.c),
        te::reduce_axis("rr", d.r),
        te::reduce_axis("rs", d.s),
    );
    let (axes, [pn, pk, poh, pow]) = out_axes(d, v.layout);
    let acc = te::compute("y_acc", &axes, |i| {
        let px = window(
            &x,
            d,
            v.layout,
            [
                i[pn].clone(),
                rc.expr(),
                i[poh].clone(),
                i[pow].clone(),
                rr.expr(),
                rs.expr(),
            ],
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
        func: te::create_func(v.name(), params)?,
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

/// `direct`: each computed tensor one thread per output element, 256 threads a block.
pub(crate) fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
    if name != "direct" {
        // The implicit GEMM is built by its template, not by primitives.
        return Ok(());
    }
    for block in ["y_acc", "y"] {
        let b = s.get_block(block)?;
        let loops = s.get_loops(b)?;
        let fused = s.fuse(&loops[..4])?;
        let parts = s.split(fused, &[None, Some(256)])?;
        s.bind(parts[0], ThreadAxis::BlockIdxX)?;
        s.bind(parts[1], ThreadAxis::ThreadIdxX)?;
    }
    Ok(())
}

/// The implicit-GEMM convolution at `shape` with the fp16 matmul `config`, fused.
fn build(shape: &Shape, config: &Config, v: Variant) -> Result<Func, BuildError> {
    let p = F16Params::from_config(config)?;
    let d = Dims::of(shape);
    let (x, w, b) = placeholders(d, v);
    let (gm, gk, gn) = (d.n * d.oh * d.ow, d.c * d.r * d.s, d.k);
    let ohw = d.oh * d.ow;
    // The reduction index kk as (c, r, s): channels innermost in NHWC.
    let split = |kk: &Expr| -> [Expr; 3] {
        match v.layout {
            Layout::Nhwc => [
                kk.clone() % d.c,
                kk.clone() / (d.s * d.c),
                kk.clone() / d.c % d.s,
            ],
            Layout::Nchw => [
                kk.clone() / (d.r * d.s),
                kk.clone() / d.s % d.r,
                kk.clone() % d.s,
            ],
        }
    };
    // im2col: GEMM row i -> (n, oh, ow).
    let cols = te::compute("x_cols", &[("i", gm), ("kk", gk)], |i| {
        let row = &i[0];
        let [c, r, s] = split(&i[1]);
        let pixel = [
            row.clone() / ohw,
            row.clone() / d.ow % d.oh,
            row.clone() % d.ow,
        ];
        let [n, oh, ow] = pixel;
        window(&x, d, v.layout, [n, c, oh, ow, r, s])
    });
    let weights = te::compute("w_cols", &[("kk", gk), ("j", gn)], |i| {
        let [c, r, s] = split(&i[0]);
        filter(&w, v.layout, [i[1].clone(), c, r, s])
    });
    let gemm = te::placeholder("y_gemm", &[gm, gn], DType::F16);
    // The GEMM result in the output's layout: row n*OH*OW + oh*OW + ow, column k. With a
    // bias, the fp16 product gets it added in f32 and goes through the ReLU.
    let (axes, [pn, pk, poh, pow]) = out_axes(d, v.layout);
    let output = te::compute("y", &axes, |i| {
        let row = &i[pn] * ohw + &i[poh] * d.ow + &i[pow];
        let val = gemm.at(&[row, i[pk].clone()]);
        match &b {
            Some(_) => finish(val.cast(DType::F32), b.as_ref(), &i[pk]),
            None => val,
        }
    });
    let anchor = matmul_f16::template_over(v.name(), &cols, &weights, &gemm, &p)?;
    let fused = fuse(&anchor, &output).map_err(|e| BuildError::Config {
        config: config.to_string(),
        reason: e.to_string(),
    })?;
    Ok(conv2d::in_op_order(fused.func))
}

/// The float64 reference: [`conv2d::reference`] (with bias and ReLU for the bias
/// variant) on NCHW/OIHW views of the inputs, its result seen in the op's layout.
pub(crate) fn reference(inputs: &[ArrayD<f64>], shape: &Shape, op: &str) -> ArrayD<f64> {
    let v = Variant::of(op);
    let four = |a: &ArrayD<f64>| a.ndim() == 4;
    if v.layout == Layout::Nchw || inputs.len() < 2 || !four(&inputs[0]) || !four(&inputs[1]) {
        return conv2d::reference(inputs, shape, v.bias);
    }
    // NHWC -> NCHW, HWIO -> OIHW; the bias stays.
    let mut nchw = vec![
        inputs[0].clone().permuted_axes(IxDyn(&[0, 3, 1, 2])),
        inputs[1].clone().permuted_axes(IxDyn(&[3, 2, 0, 1])),
    ];
    nchw.extend(inputs[2..].iter().cloned());
    conv2d::reference(&nchw, shape, v.bias)
        .permuted_axes(IxDyn(&[0, 2, 3, 1]))
        .as_standard_layout()
        .into_owned()
}
