//! The implicit-GEMM convolution (seed 004): a matmul template over the im2col view of
//! the input, with the index mapping GEMM row `i → (n, oh, ow)`, column `j → k`,
//! reduction `kk → (c, r, s)`. The im2col and filter views are prologues and the output
//! (in its layout, with bias and ReLU) an epilogue, fused into the matmul template's one
//! kernel ([`weft_ir::fusion`]): the views are never stored, and padding and tile edges
//! are predicated loads. The two views are [`super::conv_views`]'s, the same code the
//! whole-model compiler's convolution anchors build theirs with; here they read the
//! convolution's placeholders ([`super::conv`]).
//!
//! One builder ([`build`]) serves every convolution: it is parameterised by the
//! convolution's sizes ([`ConvGeometry`]), its variant ([`Variant`]: element type, layout,
//! bias) and by its anchor, the matmul template it is built on — [`super::matmul`] for
//! fp32, [`super::matmul_f16`] (matrix units) for fp16. The layouts differ in the
//! reduction index: in NCHW `kk → (c, r, s)` and the
//! gathers are scalar (right at every size and slower, as in cuDNN, which converts NCHW
//! to NHWC for its tensor-core kernels); in NHWC `kk → (r, s, c)`, channels innermost,
//! so that where `C` is a multiple of 8 one 16-byte load fetches 8 channels of one input
//! pixel (the padding test is the same for all of them), and the HWIO filter *is* the
//! `[R·S·C, K]` matrix.
//!
//! The configs are the anchor's: [`matmul::OP_PARAMS`] over views for fp32
//! ([`BIAS_RELU_PARAMS`] with `fuse` for [`build_bias_relu`]), [`matmul_f16::OP_PARAMS`]
//! for fp16; [`op_rule`] is the stated rule over the implicit GEMM's product and
//! [`op_pays`] says whether a split config can pay at a geometry.

use super::matmul;
use super::matmul_f16;
use super::product::Matmul;
use super::split_k::{self, Anchor, Split};
use weft_codegen_common::TargetLimits;
use weft_ir::func::{Func, Param, Stmt};
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_ir::schedule::Schedule;

use super::conv::{
    Variant, bias_relu, filter, finish, in_op_order, input, one_thread_per_element, out_axes,
    placeholders,
};
use super::conv_views::{self, ConvGeometry};
use super::{BuildError, Config, rule};

/// The product as the rule sees it: split where its tiles are few and its reduction
/// long.
fn product(g: &ConvGeometry) -> rule::Product {
    let (m, n, k) = g.gemm();
    rule::Product::split(m, n, k)
}

/// Whether a config of the fp32 (`f16` false) or fp16 template can pay at a
/// convolution's geometry ([`split_k::pays`]; `fuse` aside).
pub fn op_pays(g: &ConvGeometry, f16: bool, config: &Config) -> bool {
    split_k::config_pays(g.gemm(), &without_fuse(config), |c| {
        Matmul::from_config(f16, c).ok().map(|t| t.block())
    })
}

/// The config with no tuning record, and why: for fp32 (`f16` false) the matmul rule
/// over the product (its limits over views, without the 96-row tile), for fp16 the fp16
/// rule over views.
pub fn op_rule(limits: &TargetLimits, g: &ConvGeometry, f16: bool) -> (Config, String) {
    if f16 {
        return rule::for_op(matmul_f16::rule_config(limits, product(g), true));
    }
    let limits = matmul::limits_over_views(limits);
    rule::for_op(matmul::rule_config_over_views(&limits, product(g)))
}

/// The matmul parameters and `fuse`: 1 (the default) fuses bias and ReLU into the
/// implicit GEMM's stores; 0 stores the convolution and runs bias and ReLU as a second
/// kernel — the unfused baseline that shows what fusion saves.
pub const BIAS_RELU_PARAMS: &[(&str, &str)] = &[
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

/// [`matmul::op_describe`] with whether bias and ReLU are fused (`fuse`).
pub fn describe_bias_relu(config: &Config) -> Result<String, String> {
    let (gemm, fused) = split_fuse(config).map_err(|e| e.to_string())?;
    let tail = if fused {
        ", bias-ReLU fused"
    } else {
        ", bias-ReLU as a second kernel"
    };
    Ok(matmul::op_describe(&gemm)? + tail)
}

/// A convolution with bias and ReLU of fp32 variant `v` at `g` with a
/// [`BIAS_RELU_PARAMS`] config: `fuse` = 1 (or absent) is [`build`], one kernel; `fuse`
/// = 0 the unfused baseline, the convolution stored, then bias and ReLU as a second
/// kernel.
pub fn build_bias_relu(g: &ConvGeometry, v: &Variant, config: &Config) -> Result<Func, BuildError> {
    let (gemm, fused) = split_fuse(config)?;
    if fused {
        build(g, v, &gemm)
    } else {
        build_unfused(g, v, &gemm)
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

/// The implicit-GEMM convolution of variant `v` at `g` on the matmul template of
/// its element type (fp16: the fp16 template) with `config`: one kernel, the prologues
/// and the epilogue fused in; with `sk` > 1 the split parts, then the summing kernel
/// with the epilogue fused in ([`split_k`]).
///
/// The te objects are made in a fixed order (placeholders, im2col, filter view, GEMM
/// result, output) and the emitted code depends on that graph only: every variant's
/// kernel is the one this builder has always made.
pub fn build(g: &ConvGeometry, v: &Variant, config: &Config) -> Result<Func, BuildError> {
    let (rest, sk) = split_k::parts(config)?;
    let anchor = Matmul::from_config(v.dtype == DType::F16, &rest)?;
    let (x, w, b) = placeholders(g, v);
    let (gm, gn, _) = g.gemm();
    let layout = v.layout.views();
    let cols = conv_views::x_cols(g, layout, v.dtype, |at| input(&x, v.layout, at));
    let weights = conv_views::w_cols(g, layout, |at| filter(&w, v.layout, at));
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
    let (axes, [pn, pk, poh, pow]) = out_axes(g, v.layout);
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
        (Some(b), DType::F32) => bias_relu(&y, b, g, v.layout),
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

/// The name the unfused baseline's convolution kernel has always had.
const UNFUSED_CONV: &str = "conv2d";

/// Bias and ReLU unfused: the implicit GEMM stores the convolution `y` (a global
/// temporary, the variant without its bias), then a second kernel, one thread per
/// element, computes `relu(y + bias)`; the Func is named after `v`.
fn build_unfused(g: &ConvGeometry, v: &Variant, config: &Config) -> Result<Func, BuildError> {
    let plain = Variant {
        name: UNFUSED_CONV,
        bias: false,
        ..*v
    };
    let conv = build(g, &plain, config)?;
    let bad = |reason: String| BuildError::Config {
        config: config.to_string(),
        reason,
    };
    // The convolution's output parameter becomes the temporary the epilogue reads.
    let Some(Param::Buffer(y)) = conv.params.last().cloned() else {
        return Err(bad("the convolution has no output parameter".into()));
    };
    let bias = te::placeholder("bias", &[g.k], v.dtype);
    let z = bias_relu(&y, &bias, g, v.layout);
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
        name: v.name.into(),
        params,
        allocs,
        body: Stmt::seq(vec![conv.body, epilogue.body]),
        kernel_hints: hints,
    })
}
