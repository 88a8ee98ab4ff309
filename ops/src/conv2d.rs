//! `conv2d` (NCHW, fp32, stride and zero padding) and `conv2d-bias-relu` (the
//! Conv-BN-ReLU of inference, with BatchNorm folded into the bias).
//!
//! Schedules:
//! - `direct`: the te definition, one thread per output element (`conv2d-bias-relu`:
//!   the convolution, then bias and ReLU as a second kernel);
//! - `implicit-gemm`: the matmul template ([`crate::templates::matmul`]) over the
//!   im2col view of the input, with the index mapping of the implicit-GEMM convolution
//!   (seed 004): GEMM row `i → (n, oh, ow)`, column `j → k`, reduction `kk → (c, r, s)`.
//!   The im2col and weight views are prologues and the NCHW output (plus bias and ReLU)
//!   an epilogue, fused into the template's one kernel ([`weft_ir::fusion`]): the views
//!   are never stored, and padding and tile edges are predicated loads.

use ndarray::{ArrayD, Ix1, Ix4, IxDyn};
use weft_ir::func::{Func, Param, Stmt};
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;

use crate::templates::matmul::{self, MatmulParams};
use crate::templates::winograd::{self, WinogradDims};
use crate::templates::{BuildError, Config, TemplateSpec};
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
    template: Some(&IMPLICIT_GEMM),
    zero_ok: &["pad"],
    check,
};

pub(crate) const BIAS_RELU_SPEC: OpSpec = OpSpec {
    name: "conv2d-bias-relu",
    summary: "relu(conv2d(x, w) + bias[k]): Conv-BN-ReLU with BatchNorm folded into the bias",
    dims: DIMS,
    schedules: &["direct", "implicit-gemm"],
    best: "implicit-gemm",
    bench: BENCH,
    small: SMALL,
    seed: "002, 003",
    template: Some(&IMPLICIT_GEMM_BIAS_RELU),
    zero_ok: &["pad"],
    check,
};

/// `winograd-conv2d`: the 3×3, stride-1 convolution by Winograd's F(2×2, 3×3), with the
/// conv2d op's shape parameters (so that shapes compare one to one) and its `direct`
/// schedule as a baseline.
pub(crate) const WINOGRAD_SPEC: OpSpec = OpSpec {
    name: "winograd-conv2d",
    summary: "3x3 stride-1 conv2d (NCHW, fp32) by Winograd F(2x2,3x3): transforms around 16 batched GEMMs",
    dims: DIMS,
    schedules: &["direct", "winograd"],
    best: "winograd",
    bench: BENCH,
    small: &[
        &[1, 8, 13, 11, 4, 3, 3, 1, 1],
        &[2, 3, 17, 19, 5, 3, 3, 1, 0],
    ],
    seed: "003",
    template: Some(&WINOGRAD),
    zero_ok: &["pad"],
    check: check_winograd,
};

/// The Winograd schedule: the batched product takes the matmul template's space.
const WINOGRAD: TemplateSpec = TemplateSpec {
    schedule: "winograd",
    params: matmul::PARAMS,
    space: matmul::space,
    default: matmul::default_config,
    describe: matmul::describe,
    build: |shape, config| {
        let p = MatmulParams::from_config(config)?;
        let d = Dims::of(shape);
        let dims = WinogradDims {
            n: d.n,
            c: d.c,
            h: d.h,
            w: d.w,
            k: d.k,
            pad: d.pad,
        };
        Ok(winograd::template(&dims, &p)?)
    },
};

fn check_winograd(shape: &Shape) -> Result<(), String> {
    let d = Dims::of(shape);
    if (d.r, d.s, d.stride) != (3, 3, 1) {
        return Err(format!(
            "Winograd F(2x2,3x3) takes a 3x3 kernel at stride 1, not {}x{} at stride {}",
            d.r, d.s, d.stride
        ));
    }
    check(shape)
}

/// The implicit-GEMM schedule: the matmul template's space and configs.
const IMPLICIT_GEMM: TemplateSpec = TemplateSpec {
    schedule: "implicit-gemm",
    params: matmul::PARAMS,
    space: matmul::space,
    default: matmul::default_config,
    describe: matmul::describe,
    build: |shape, config| build(shape, config, false),
};

/// The matmul parameters and `fuse`: 1 (the default) fuses bias and ReLU into the
/// implicit GEMM's stores; 0 stores the convolution and runs bias and ReLU as a second
/// kernel — the unfused baseline that shows what fusion saves.
const BIAS_RELU_PARAMS: &[(&str, &str)] = &[
    matmul::PARAMS[0],
    matmul::PARAMS[1],
    matmul::PARAMS[2],
    matmul::PARAMS[3],
    matmul::PARAMS[4],
    matmul::PARAMS[5],
    matmul::PARAMS[6],
    matmul::PARAMS[7],
    matmul::PARAMS[8],
    matmul::PARAMS[9],
    matmul::PARAMS[10],
    (
        "fuse",
        "1 (default): bias and ReLU fused into the GEMM's stores; 0: a second kernel",
    ),
];

const IMPLICIT_GEMM_BIAS_RELU: TemplateSpec = TemplateSpec {
    params: BIAS_RELU_PARAMS,
    describe: |config| {
        let (gemm, fused) = split_fuse(config).map_err(|e| e.to_string())?;
        let tail = if fused {
            ", bias-ReLU fused"
        } else {
            ", bias-ReLU as a second kernel"
        };
        Ok(matmul::describe(&gemm)? + tail)
    },
    build: |shape, config| {
        let (gemm, fused) = split_fuse(config)?;
        if fused {
            build(shape, &gemm, true)
        } else {
            build_unfused(shape, &gemm)
        }
    },
    ..IMPLICIT_GEMM
};

/// The matmul config and whether to fuse (`fuse`, 1 when absent).
fn split_fuse(config: &Config) -> Result<(Config, bool), BuildError> {
    let gemm = Config(
        config
            .0
            .iter()
            .filter(|(n, _)| n != "fuse")
            .cloned()
            .collect(),
    );
    match config.get("fuse").unwrap_or(1) {
        0 => Ok((gemm, false)),
        1 => Ok((gemm, true)),
        v => Err(config.invalid(format!("`fuse` = {v} must be 0 or 1"))),
    }
}

/// The sizes of one convolution.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dims {
    pub(crate) n: i64,
    pub(crate) c: i64,
    pub(crate) h: i64,
    pub(crate) w: i64,
    pub(crate) k: i64,
    pub(crate) r: i64,
    pub(crate) s: i64,
    pub(crate) stride: i64,
    pub(crate) pad: i64,
    pub(crate) oh: i64,
    pub(crate) ow: i64,
}

impl Dims {
    pub(crate) fn of(shape: &Shape) -> Dims {
        let g = |k: &str| shape.get(k);
        let (h, w, r, s, stride, pad) = (g("h"), g("w"), g("r"), g("s"), g("stride"), g("pad"));
        Dims {
            n: g("n"),
            c: g("c"),
            h,
            w,
            k: g("k"),
            r,
            s,
            stride,
            pad,
            oh: (h + 2 * pad - r) / stride.max(1) + 1,
            ow: (w + 2 * pad - s) / stride.max(1) + 1,
        }
    }
}

pub(crate) fn check(shape: &Shape) -> Result<(), String> {
    let d = Dims::of(shape);
    if d.h + 2 * d.pad < d.r || d.w + 2 * d.pad < d.s {
        return Err(format!(
            "the {}x{} kernel is larger than the padded {}x{} input",
            d.r,
            d.s,
            d.h + 2 * d.pad,
            d.w + 2 * d.pad
        ));
    }
    Ok(())
}

/// The memory layout of input, filter and output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Input `[N, H, W, C]`, filter `[R, S, C, K]`, output `[N, OH, OW, K]`.
    Nhwc,
    /// Input `[N, C, H, W]`, filter `[K, C, R, S]`, output `[N, K, OH, OW]`.
    Nchw,
}

/// The input element that output pixel `(n, oh, ow)` reads at channel `c` and kernel
/// position `(r, s)`, zero in the padding.
pub(crate) fn window(x: &Buffer, d: Dims, layout: Layout, [n, c, oh, ow, r, s]: [Expr; 6]) -> Expr {
    let ih = oh * d.stride - d.pad + r;
    let iw = ow * d.stride - d.pad + s;
    let inside = te::all([
        ih.clone().ge(0),
        ih.clone().lt(d.h),
        iw.clone().ge(0),
        iw.clone().lt(d.w),
    ]);
    let at = match layout {
        Layout::Nhwc => x.at(&[n, ih, iw, c]),
        Layout::Nchw => x.at(&[n, c, ih, iw]),
    };
    te::if_then_else(inside, at, Expr::zero(x.dtype()))
}

fn placeholders(d: Dims, bias: bool) -> (Buffer, Buffer, Option<Buffer>) {
    let x = te::placeholder("x", &[d.n, d.c, d.h, d.w], DType::F32);
    let wt = te::placeholder("w", &[d.k, d.c, d.r, d.s], DType::F32);
    let b = bias.then(|| te::placeholder("bias", &[d.k], DType::F32));
    (x, wt, b)
}

/// `relu(y + bias[k])` over an NCHW `y`.
fn bias_relu(y: &Buffer, bias: &Buffer, d: Dims) -> Buffer {
    te::compute(
        "z",
        &[("n", d.n), ("k", d.k), ("oh", d.oh), ("ow", d.ow)],
        |i| te::maximum(y.at(i) + bias.at(&[&i[1]]), 0.0f32),
    )
}

fn define_with(shape: &Shape, bias: bool) -> Result<Definition, TeError> {
    let d = Dims::of(shape);
    let (x, wt, b) = placeholders(d, bias);
    let (rc, rr, rs) = (
        te::reduce_axis("rc", d.c),
        te::reduce_axis("rr", d.r),
        te::reduce_axis("rs", d.s),
    );
    let y = te::compute(
        "y",
        &[("n", d.n), ("k", d.k), ("oh", d.oh), ("ow", d.ow)],
        |i| {
            let v = window(
                &x,
                d,
                Layout::Nchw,
                [
                    i[0].clone(),
                    rc.expr(),
                    i[2].clone(),
                    i[3].clone(),
                    rr.expr(),
                    rs.expr(),
                ],
            );
            te::sum(
                v * wt.at(&[i[1].clone(), rc.expr(), rr.expr(), rs.expr()]),
                &[&rc, &rr, &rs],
            )
        },
    );
    let (inputs, output) = match &b {
        Some(b) => (vec![x, wt, b.clone()], bias_relu(&y, b, d)),
        None => (vec![x, wt], y),
    };
    let mut params: Vec<&Buffer> = inputs.iter().collect();
    params.push(&output);
    let name = if bias { "conv2d_bias_relu" } else { "conv2d" };
    let out_elems = d.n * d.k * d.oh * d.ow;
    Ok(Definition {
        func: te::create_func(name, params)?,
        inputs: inputs.clone(),
        output,
        flops: 2.0 * (out_elems * d.c * d.r * d.s) as f64,
        bytes: 4.0
            * (d.n * d.c * d.h * d.w
                + d.k * d.c * d.r * d.s
                + out_elems
                + if bias { d.k } else { 0 }) as f64,
    })
}

pub(crate) fn define(shape: &Shape) -> Result<Definition, TeError> {
    define_with(shape, false)
}

pub(crate) fn define_bias_relu(shape: &Shape) -> Result<Definition, TeError> {
    define_with(shape, true)
}

/// `direct`: every computed tensor one thread per output element, 256 threads a block.
pub(crate) fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
    match name {
        "direct" => {
            for block in ["y", "z"] {
                let Ok(b) = s.get_block(block) else { continue };
                let loops = s.get_loops(b)?;
                let fused = s.fuse(&loops[..4])?;
                let parts = s.split(fused, &[None, Some(256)])?;
                s.bind(parts[0], ThreadAxis::BlockIdxX)?;
                s.bind(parts[1], ThreadAxis::ThreadIdxX)?;
            }
            Ok(())
        }
        // The implicit GEMM is built by its template, not by primitives.
        _ => Ok(()),
    }
}

/// The implicit-GEMM convolution at `shape` with matmul `config`, fused.
fn build(shape: &Shape, config: &Config, bias: bool) -> Result<Func, BuildError> {
    let p = MatmulParams::from_config(config)?;
    let d = Dims::of(shape);
    let (x, wt, b) = placeholders(d, bias);
    let (gm, gk, gn) = (d.n * d.oh * d.ow, d.c * d.r * d.s, d.k);
    let (ohw, rs) = (d.oh * d.ow, d.r * d.s);
    // im2col: GEMM row i -> (n, oh, ow), reduction index kk -> (c, r, s).
    let cols = te::compute("x_cols", &[("i", gm), ("kk", gk)], |i| {
        let (row, kk) = (&i[0], &i[1]);
        window(
            &x,
            d,
            Layout::Nchw,
            [
                row.clone() / ohw,
                kk.clone() / rs,
                row.clone() / d.ow % d.oh,
                row.clone() % d.ow,
                kk.clone() / d.s % d.r,
                kk.clone() % d.s,
            ],
        )
    });
    let weights = te::compute("w_cols", &[("kk", gk), ("j", gn)], |i| {
        let kk = &i[0];
        wt.at(&[
            i[1].clone(),
            kk.clone() / rs,
            kk.clone() / d.s % d.r,
            kk.clone() % d.s,
        ])
    });
    let gemm = te::placeholder("y_gemm", &[gm, gn], DType::F32);
    // The GEMM result seen as NCHW: row n*OH*OW + oh*OW + ow, column k.
    let y = te::compute(
        "y",
        &[("n", d.n), ("k", d.k), ("oh", d.oh), ("ow", d.ow)],
        |i| gemm.at(&[&i[0] * ohw + &i[2] * d.ow + &i[3], i[1].clone()]),
    );
    let output = match &b {
        Some(b) => bias_relu(&y, b, d),
        None => y,
    };
    let name = if bias { "conv2d_bias_relu" } else { "conv2d" };
    let anchor = matmul::template_over(name, &cols, &weights, &gemm, &p)?;
    let fused = fuse(&anchor, &output).map_err(|e| BuildError::Config {
        config: config.to_string(),
        reason: e.to_string(),
    })?;
    Ok(in_op_order(fused.func))
}

/// `func` with its parameters in the op's order: x, w, (bias), output (fusion lists the
/// inputs as the anchor met them).
pub(crate) fn in_op_order(mut func: Func) -> Func {
    let order = |name: &str| ["x", "w", "bias"].iter().position(|n| *n == name);
    func.params
        .sort_by_key(|p| order(p.name()).unwrap_or(usize::MAX));
    func
}

/// conv2d-bias-relu unfused: the implicit GEMM stores the convolution `y` (a global
/// temporary), then a second kernel, one thread per element, computes `relu(y + bias)`.
fn build_unfused(shape: &Shape, config: &Config) -> Result<Func, BuildError> {
    let d = Dims::of(shape);
    let conv = build(shape, config, false)?;
    let bad = |reason: String| BuildError::Config {
        config: config.to_string(),
        reason,
    };
    // The convolution's output parameter becomes the temporary the epilogue reads.
    let Some(Param::Buffer(y)) = conv.params.last().cloned() else {
        return Err(bad("the convolution has no output parameter".into()));
    };
    let bias = te::placeholder("bias", &[d.k], DType::F32);
    let z = bias_relu(&y, &bias, d);
    let epilogue = te::create_func_with_inputs("bias_relu", &[&y, &bias], &[&z])
        .map_err(|e| bad(e.to_string()))?;
    let mut s = Schedule::new(epilogue);
    apply(&mut s, "direct").map_err(|e| bad(e.to_string()))?;
    let epilogue = s.func().clone();
    let mut params: Vec<Param> = conv.params[..conv.params.len() - 1].to_vec();
    params.push(Param::Buffer(bias));
    params.push(Param::Buffer(z));
    let mut allocs = conv.allocs;
    allocs.push(y);
    allocs.extend(epilogue.allocs);
    let mut hints = conv.kernel_hints;
    hints.resize(1, Default::default());
    hints.extend(epilogue.kernel_hints);
    Ok(Func {
        name: "conv2d_bias_relu".into(),
        params,
        allocs,
        body: Stmt::seq(vec![conv.body, epilogue.body]),
        kernel_hints: hints,
    })
}

pub(crate) fn reference(inputs: &[ArrayD<f64>], shape: &Shape, bias: bool) -> ArrayD<f64> {
    let d = Dims::of(shape);
    let (Ok(x), Ok(wt)) = (
        inputs[0].view().into_dimensionality::<Ix4>(),
        inputs[1].view().into_dimensionality::<Ix4>(),
    ) else {
        return ArrayD::zeros(IxDyn(&[0]));
    };
    let b = inputs
        .get(2)
        .and_then(|b| b.view().into_dimensionality::<Ix1>().ok());
    let u = |v: i64| v as usize;
    let mut out = ArrayD::<f64>::zeros(IxDyn(&[u(d.n), u(d.k), u(d.oh), u(d.ow)]));
    for n in 0..d.n {
        for k in 0..d.k {
            for oh in 0..d.oh {
                for ow in 0..d.ow {
                    let mut acc = 0.0;
                    for c in 0..d.c {
                        for r in 0..d.r {
                            for s in 0..d.s {
                                let (ih, iw) =
                                    (oh * d.stride - d.pad + r, ow * d.stride - d.pad + s);
                                if ih >= 0 && ih < d.h && iw >= 0 && iw < d.w {
                                    acc += x[[u(n), u(c), u(ih), u(iw)]]
                                        * wt[[u(k), u(c), u(r), u(s)]];
                                }
                            }
                        }
                    }
                    if bias {
                        acc = (acc + b.map_or(0.0, |b| b[u(k)])).max(0.0);
                    }
                    out[[u(n), u(k), u(oh), u(ow)]] = acc;
                }
            }
        }
    }
    out
}
