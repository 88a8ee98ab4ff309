//! The implicit-GEMM convolution (seed 004): a matmul template over the im2col view of
//! the input, with the index mapping GEMM row `i → (n, oh, ow)`, column `j → k`,
//! reduction `kk → (c, r, s)`. The im2col and filter views are prologues and the output
//! (in its layout, with bias and ReLU) an epilogue, fused into the matmul template's one
//! kernel ([`weft_ir::fusion`]): the views are never stored, and padding and tile edges
//! are predicated loads. The two views are [`super::conv_views`]'s, the same code the
//! whole-model compiler's convolution anchors build theirs with; here they read the
//! op's placeholders.
//!
//! One builder (`build`) serves every convolution op: it is parameterised by the op's
//! variant (`conv::Variant`: element type, layout, bias) and by its anchor, the matmul
//! template it is built on — [`super::matmul`] for fp32, [`super::matmul_f16`] (matrix
//! units) for fp16. The layouts differ in the reduction index: in NCHW `kk → (c, r, s)` and the
//! gathers are scalar (right at every size and slower, as in cuDNN, which converts NCHW
//! to NHWC for its tensor-core kernels); in NHWC `kk → (r, s, c)`, channels innermost,
//! so that where `C` is a multiple of 8 one 16-byte load fetches 8 channels of one input
//! pixel (the padding test is the same for all of them), and the HWIO filter *is* the
//! `[R·S·C, K]` matrix.
//!
//! | op | spec | anchor |
//! | --- | --- | --- |
//! | `conv2d` | [`CONV2D`] | [`super::matmul`] |
//! | `conv2d-bias-relu` | [`CONV2D_BIAS_RELU`] (`fuse` = 0: bias and ReLU as a second kernel) | [`super::matmul`] |
//! | `conv2d-f16`, `conv2d-f16-bias-relu`, `conv2d-f16-nchw` | [`CONV2D_F16`], [`CONV2D_F16_BIAS_RELU`], [`CONV2D_F16_NCHW`] | [`super::matmul_f16`] |

use super::matmul;
use super::matmul_f16;
use super::product::Matmul;
use super::split_k::{self, Anchor, Split};
use weft_codegen_common::TargetLimits;
use weft_ir::func::{Func, Param, Stmt};
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_ir::schedule::Schedule;

use super::conv_views::{self, ConvGeometry, ConvLayout};
use super::{BuildError, Config, TemplateSpec, rule};
use crate::Shape;
use crate::conv::{
    Dims, Layout, Variant, bias_relu, filter, finish, in_op_order, input, one_thread_per_element,
    out_axes, placeholders,
};

/// `conv2d`'s `implicit-gemm`: the matmul template's space and configs.
pub const CONV2D: TemplateSpec = TemplateSpec {
    schedule: "implicit-gemm",
    params: matmul::OP_PARAMS,
    space: matmul::op_space_over_views,
    default: matmul::default_config_over_views,
    rule: Some(conv2d_rule),
    pays: conv2d_pays,
    describe: matmul::op_describe,
    build: build_conv2d,
};

/// `conv2d-bias-relu`'s `implicit-gemm`: the matmul template's space, and `fuse`.
pub const CONV2D_BIAS_RELU: TemplateSpec = TemplateSpec {
    params: BIAS_RELU_PARAMS,
    describe: describe_bias_relu,
    build: build_bias_relu,
    ..CONV2D
};

/// The fp16 ops' `implicit-gemm`: the fp16 matmul template's space over views.
const fn f16_spec(build: fn(&Shape, &Config) -> Result<Func, BuildError>) -> TemplateSpec {
    TemplateSpec {
        schedule: "implicit-gemm",
        params: matmul_f16::OP_PARAMS,
        space: matmul_f16::op_space_over_views,
        default: matmul_f16::default_config_over_views,
        rule: Some(conv2d_f16_rule),
        pays: conv2d_f16_pays,
        describe: matmul_f16::op_describe_over_views,
        build,
    }
}

/// `conv2d-f16`'s `implicit-gemm` (NHWC).
pub const CONV2D_F16: TemplateSpec = f16_spec(build_conv2d_f16);
/// `conv2d-f16-bias-relu`'s `implicit-gemm` (NHWC, bias and ReLU fused).
pub const CONV2D_F16_BIAS_RELU: TemplateSpec = f16_spec(build_conv2d_f16_bias_relu);
/// `conv2d-f16-nchw`'s `implicit-gemm`.
pub const CONV2D_F16_NCHW: TemplateSpec = f16_spec(build_conv2d_f16_nchw);

/// A workload's convolution as the views read it: one stride and one padding for both
/// axes, undilated.
pub(crate) fn geometry(d: Dims) -> ConvGeometry {
    ConvGeometry {
        n: d.n,
        c: d.c,
        h: d.h,
        w: d.w,
        k: d.k,
        r: d.r,
        s: d.s,
        oh: d.oh,
        ow: d.ow,
        strides: [d.stride; 2],
        pads: [d.pad; 2],
        dilations: None,
    }
}

/// The views' reduction order for a workload's layout.
fn views_layout(layout: Layout) -> ConvLayout {
    match layout {
        Layout::Nhwc => ConvLayout::Nhwc,
        Layout::Nchw => ConvLayout::Nchw,
    }
}

/// The implicit GEMM's product `n·oh·ow × k × c·r·s` for a convolution op's shape.
fn gemm_of(shape: &Shape) -> (i64, i64, i64) {
    geometry(Dims::of(shape)).gemm()
}

/// The product as the rule sees it: split where its tiles are few and its reduction
/// long.
fn product(shape: &Shape) -> rule::Product {
    let (m, n, k) = gemm_of(shape);
    rule::Product::split(m, n, k)
}

/// Whether a config of the fp32 (`f16` false) or fp16 template can pay at a
/// convolution's shape ([`split_k::pays`]).
fn pays_on(f16: bool, shape: &Shape, config: &Config) -> bool {
    split_k::config_pays(gemm_of(shape), &without_fuse(config), |c| {
        Matmul::from_config(f16, c).ok().map(|t| t.block())
    })
}

fn conv2d_pays(_: &TargetLimits, shape: &Shape, config: &Config) -> bool {
    pays_on(false, shape, config)
}

fn conv2d_f16_pays(_: &TargetLimits, shape: &Shape, config: &Config) -> bool {
    pays_on(true, shape, config)
}

/// The fp32 convolutions' config with no tuning record: the matmul rule over the product.
fn conv2d_rule(limits: &TargetLimits, shape: &Shape) -> (Config, String) {
    let limits = matmul::limits_over_views(limits);
    rule::for_op(matmul::rule_config_over_views(&limits, product(shape)))
}

/// The fp16 convolutions' config with no tuning record: the fp16 rule over views.
fn conv2d_f16_rule(limits: &TargetLimits, shape: &Shape) -> (Config, String) {
    rule::for_op(matmul_f16::rule_config(limits, product(shape), true))
}

fn build_conv2d(shape: &Shape, config: &Config) -> Result<Func, BuildError> {
    build(shape, config, &Variant::CONV2D)
}

fn build_conv2d_f16(shape: &Shape, config: &Config) -> Result<Func, BuildError> {
    build(shape, config, &Variant::CONV2D_F16)
}

fn build_conv2d_f16_bias_relu(shape: &Shape, config: &Config) -> Result<Func, BuildError> {
    build(shape, config, &Variant::CONV2D_F16_BIAS_RELU)
}

fn build_conv2d_f16_nchw(shape: &Shape, config: &Config) -> Result<Func, BuildError> {
    build(shape, config, &Variant::CONV2D_F16_NCHW)
}

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
    split_k::PARAM,
    (
        "fuse",
        "1 (default): bias and ReLU fused into the GEMM's stores; 0: a second kernel",
    ),
];

fn describe_bias_relu(config: &Config) -> Result<String, String> {
    let (gemm, fused) = split_fuse(config).map_err(|e| e.to_string())?;
    let tail = if fused {
        ", bias-ReLU fused"
    } else {
        ", bias-ReLU as a second kernel"
    };
    Ok(matmul::op_describe(&gemm)? + tail)
}

fn build_bias_relu(shape: &Shape, config: &Config) -> Result<Func, BuildError> {
    let (gemm, fused) = split_fuse(config)?;
    if fused {
        build(shape, &gemm, &Variant::CONV2D_BIAS_RELU)
    } else {
        build_unfused(shape, &gemm)
    }
}

/// The config without `fuse`.
fn without_fuse(config: &Config) -> Config {
    Config(
        config
            .0
            .iter()
            .filter(|(n, _)| n != "fuse")
            .cloned()
            .collect(),
    )
}

/// The matmul config and whether to fuse (`fuse`, 1 when absent).
fn split_fuse(config: &Config) -> Result<(Config, bool), BuildError> {
    let gemm = without_fuse(config);
    match config.get("fuse").unwrap_or(1) {
        0 => Ok((gemm, false)),
        1 => Ok((gemm, true)),
        v => Err(config.invalid(format!("`fuse` = {v} must be 0 or 1"))),
    }
}

/// The implicit-GEMM convolution of variant `v` at `shape` on the matmul template of
/// its element type (fp16: the fp16 template) with `config`: one kernel, the prologues
/// and the epilogue fused in; with `sk` > 1 the split parts, then the summing kernel
/// with the epilogue fused in ([`split_k`]).
///
/// The te objects are made in a fixed order (placeholders, im2col, filter view, GEMM
/// result, output) and the emitted code depends on that graph only: every variant's
/// kernel is the one this builder has always made.
fn build(shape: &Shape, config: &Config, v: &Variant) -> Result<Func, BuildError> {
    let (rest, sk) = split_k::parts(config)?;
    let anchor = Matmul::from_config(v.dtype == DType::F16, &rest)?;
    let d = Dims::of(shape);
    let (x, w, b) = placeholders(d, v);
    let g = geometry(d);
    let (gm, gn, _) = g.gemm();
    let layout = views_layout(v.layout);
    let cols = conv_views::x_cols(&g, layout, v.dtype, |at| input(&x, v.layout, at));
    let weights = conv_views::w_cols(&g, layout, |at| filter(&w, v.layout, at));
    // With an fp16 epilogue (bias, ReLU) the GEMM hands it its f32 sums: the output is
    // rounded to fp16 once, as the definition's `finish` does, not once before the bias
    // and again after (which, where the bias cancels the sum, costs the result the
    // sum's rounding: 2⁻¹¹ of it).
    let gemm_dtype = match (&b, v.dtype) {
        (Some(_), DType::F16) => DType::F32,
        _ => v.dtype,
    };
    let split = (sk > 1).then(|| Split::new(gm, gn, sk));
    let gemm = match &split {
        Some(sp) => sp.sum.clone(),
        None => te::placeholder("y_gemm", &[gm, gn], gemm_dtype),
    };
    // The GEMM result in the output's layout: row n*OH*OW + oh*OW + ow, column k.
    let (axes, [pn, pk, poh, pow]) = out_axes(d, v.layout);
    let y = te::compute("y", &axes, |i| {
        let row = g.row([i[pn].clone(), i[poh].clone(), i[pow].clone()]);
        let val = gemm.at(&[row, i[pk].clone()]);
        match (&b, v.dtype) {
            // fp16: the f32 sum gets the bias added in f32 and goes through the ReLU on
            // its way back to fp16, as the definition's `finish`.
            (Some(_), DType::F16) => finish(val, b.as_ref(), &i[pk]),
            // A split's f32 sum, rounded to fp16 once.
            (None, DType::F16) if gemm.dtype() != DType::F16 => te::cast(val, DType::F16),
            _ => val,
        }
    });
    // fp32: bias and ReLU are the tensor `z` over `y`, as in the definition.
    let output = match (&b, v.dtype) {
        (Some(b), DType::F32) => bias_relu(&y, b, d, v.layout),
        _ => y,
    };
    if let Some(sp) = split {
        let func = sp
            .build(v.name, &cols, &weights, &output, &anchor)
            .map_err(|e| config.invalid(e))?;
        return Ok(in_op_order(func));
    }
    let anchor = anchor.template_over(v.name, &cols, &weights, &gemm)?;
    let fused = fuse(&anchor, &output).map_err(|e| BuildError::Config {
        config: config.to_string(),
        reason: e.to_string(),
    })?;
    Ok(in_op_order(fused.func))
}

/// conv2d-bias-relu unfused: the implicit GEMM stores the convolution `y` (a global
/// temporary), then a second kernel, one thread per element, computes `relu(y + bias)`.
fn build_unfused(shape: &Shape, config: &Config) -> Result<Func, BuildError> {
    let d = Dims::of(shape);
    let conv = build(shape, config, &Variant::CONV2D)?;
    let bad = |reason: String| BuildError::Config {
        config: config.to_string(),
        reason,
    };
    // The convolution's output parameter becomes the temporary the epilogue reads.
    let Some(Param::Buffer(y)) = conv.params.last().cloned() else {
        return Err(bad("the convolution has no output parameter".into()));
    };
    let bias = te::placeholder("bias", &[d.k], DType::F32);
    let z = bias_relu(&y, &bias, d, Layout::Nchw);
    let epilogue = te::create_func_with_inputs("bias_relu", &[&y, &bias], &[&z])
        .map_err(|e| bad(e.to_string()))?;
    // The `direct` schedule of the epilogue's one computed tensor.
    let mut s = Schedule::new(epilogue);
    s.get_block("z")
        .and_then(|z| one_thread_per_element(&mut s, z))
        .map_err(|e| bad(e.to_string()))?;
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
