//! The kernel library's templates ([`weft_kernels`]) as the workloads offer them: a
//! [`TemplateSpec`] binds a template to an op's named [`Shape`], and each one here maps
//! the shape's parameters onto the library's typed entry points (a product's `m`, `n`,
//! `k`; a convolution's [`ConvGeometry`](weft_kernels::conv_views::ConvGeometry);
//! depthwise sizes; Winograd's dims; attention's heads, rows, keys and head size). The
//! space, default and description are the template's own, independent of any shape.
//!
//! | op | schedule | spec | template |
//! | --- | --- | --- | --- |
//! | `matmul` | `template` | [`MATMUL`] | [`weft_kernels::matmul`] |
//! | `matmul-f16` | `template` | [`MATMUL_F16`] | [`weft_kernels::matmul_f16`] |
//! | `gemv`, `gemv-f16` | `template` | [`GEMV`], [`GEMV_F16`] | [`weft_kernels::gemv`] |
//! | `gemv-kmajor`, `gemv-kmajor-f16` | `template` | [`GEMV_KMAJOR`], [`GEMV_KMAJOR_F16`] | [`weft_kernels::gemv::kmajor`] |
//! | `conv2d`, `conv2d-bias-relu` | `implicit-gemm` | [`CONV2D`], [`CONV2D_BIAS_RELU`] | [`weft_kernels::implicit_gemm`] on the fp32 matmul |
//! | `conv2d-f16`, `-bias-relu`, `-nchw` | `implicit-gemm` | [`CONV2D_F16`], [`CONV2D_F16_BIAS_RELU`], [`CONV2D_F16_NCHW`] | [`weft_kernels::implicit_gemm`] on the fp16 matmul |
//! | `grouped-conv2d`, `grouped-conv2d-f16` | `implicit-gemm` | [`GROUPED_CONV2D`], [`GROUPED_CONV2D_F16`] | [`weft_kernels::grouped_conv`] on the fp32 or fp16 matmul, batched |
//! | `depthwise-conv2d` | `tuned` | [`DEPTHWISE`] | [`weft_kernels::depthwise`] |
//! | `depthwise-conv2d-f16` | `tuned` | [`DEPTHWISE_F16`] | [`weft_kernels::depthwise`] over f16 NHWC views |
//! | `winograd-conv2d` | `winograd` | [`WINOGRAD`] | [`weft_kernels::winograd`] |
//! | `attention-f16` | `template` | [`ATTENTION`] | [`weft_kernels::attention`] |

use std::fmt;

use weft_codegen_common::TargetLimits;
use weft_ir::func::Func;
use weft_ir::prelude::DType;
use weft_kernels::conv::Variant;
use weft_kernels::{
    BuildError, Config, attention, depthwise, gemv, grouped_conv, implicit_gemm, matmul,
    matmul_f16, winograd,
};

use crate::Shape;
use crate::conv::{self, Dims};

/// The rule for an op's template: its config for the op's `shape` on `limits` (its split
/// as the `sk` parameter, [`weft_kernels::split_k`]), and why.
pub type OpRule = fn(&TargetLimits, &Shape) -> (Config, String);

/// A template registered on an op.
pub struct TemplateSpec {
    /// The schedule name it is offered under.
    pub schedule: &'static str,
    /// Its parameters, in order, with what each means.
    pub params: &'static [(&'static str, &'static str)],
    /// The schedule space for what a target offers (independent of the input size).
    pub space: fn(&TargetLimits) -> Vec<Config>,
    /// A config that fits the target whatever the shape: what a build given no config
    /// uses, and the rule's fallback.
    pub default: fn(&TargetLimits) -> Config,
    /// The stated rule choosing the config from the target and the shape when no tuning
    /// record applies ([`weft_kernels::rule`]), with why; `None`:
    /// [`TemplateSpec::default`].
    pub rule: Option<OpRule>,
    /// Whether a config of the space can pay at a shape on a target: the tuner times
    /// only those (split-K configs where the output tiles are few and the reduction
    /// long, [`weft_kernels::split_k::pays`]; attention tiles that fit shared memory at
    /// the shape's head size); [`always`] for templates without such configs.
    pub pays: fn(&TargetLimits, &Shape, &Config) -> bool,
    /// A short description of a config (`128x128x8 tile, 256 threads, ...`), or why it
    /// is not a valid config.
    pub describe: fn(&Config) -> Result<String, String>,
    /// Builds the op's Func at `shape` with `config`.
    pub build: fn(&Shape, &Config) -> Result<Func, BuildError>,
}

impl TemplateSpec {
    /// The config to run at `shape` on `limits` with no tuning record: the rule's where
    /// the template has one, else the default; with why.
    pub fn untuned(&self, limits: &TargetLimits, shape: &Shape) -> (Config, String) {
        match self.rule {
            Some(rule) => rule(limits, shape),
            None => ((self.default)(limits), "the template's default".to_string()),
        }
    }
}

/// A [`TemplateSpec::pays`] that keeps every config.
pub fn always(_: &TargetLimits, _: &Shape, _: &Config) -> bool {
    true
}

impl fmt::Debug for TemplateSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TemplateSpec")
            .field("schedule", &self.schedule)
            .finish_non_exhaustive()
    }
}

/// A product's `(m, n, k)` from the shape of `matmul` or `matmul-f16`.
fn mnk(shape: &Shape) -> (i64, i64, i64) {
    (shape.get("m"), shape.get("n"), shape.get("k"))
}

/// The template registered on the `matmul` op.
pub const MATMUL: TemplateSpec = TemplateSpec {
    schedule: "template",
    params: matmul::OP_PARAMS,
    space: matmul::op_space,
    default: matmul::default_config,
    rule: Some(|limits, shape| {
        let (m, n, k) = mnk(shape);
        matmul::op_rule(limits, m, n, k)
    }),
    pays: |_, shape, config| {
        let (m, n, k) = mnk(shape);
        matmul::op_pays(m, n, k, config)
    },
    describe: matmul::op_describe,
    build: |shape, config| {
        let (m, n, k) = mnk(shape);
        matmul::build(m, n, k, config)
    },
};

/// The template registered on the `matmul-f16` op.
pub const MATMUL_F16: TemplateSpec = TemplateSpec {
    schedule: "template",
    params: matmul_f16::OP_PARAMS,
    space: matmul_f16::op_space,
    default: matmul_f16::default_config,
    rule: Some(|limits, shape| {
        let (m, n, k) = mnk(shape);
        matmul_f16::op_rule(limits, m, n, k)
    }),
    pays: |_, shape, config| {
        let (m, n, k) = mnk(shape);
        matmul_f16::op_pays(m, n, k, config)
    },
    describe: matmul_f16::op_describe,
    build: |shape, config| {
        let (m, n, k) = mnk(shape);
        matmul_f16::build(m, n, k, config)
    },
};

/// The skinny-product template registered on the `gemv` op (fp32).
pub const GEMV: TemplateSpec = TemplateSpec {
    schedule: "template",
    params: &gemv::PARAMS,
    space: gemv::space,
    default: |limits| gemv::default_config(limits, DType::F32),
    rule: Some(|limits, shape| {
        let (m, n, _) = mnk(shape);
        let (p, why) = gemv::GemvParams::rule(limits, m, n, DType::F32);
        (p.config(), why)
    }),
    pays: always,
    describe: |config| gemv::describe_config(config, DType::F32),
    build: |shape, config| {
        let (m, n, k) = mnk(shape);
        gemv::build(m, n, k, DType::F32, config)
    },
};

/// The skinny-product template registered on the `gemv-f16` op.
pub const GEMV_F16: TemplateSpec = TemplateSpec {
    default: |limits| gemv::default_config(limits, DType::F16),
    rule: Some(|limits, shape| {
        let (m, n, _) = mnk(shape);
        let (p, why) = gemv::GemvParams::rule(limits, m, n, DType::F16);
        (p.config(), why)
    }),
    describe: |config| gemv::describe_config(config, DType::F16),
    build: |shape, config| {
        let (m, n, k) = mnk(shape);
        gemv::build(m, n, k, DType::F16, config)
    },
    ..GEMV
};

/// The K-major skinny-product template registered on the `gemv-kmajor` op (fp32). Its
/// space is the one that fits [`gemv::MAX_M`] rows (the combine's shared memory grows
/// with the rows), so it fits every shape of the op.
pub const GEMV_KMAJOR: TemplateSpec = TemplateSpec {
    schedule: "template",
    params: &gemv::kmajor::PARAMS,
    space: |limits| gemv::kmajor::space(limits, gemv::MAX_M),
    default: |limits| gemv::kmajor::default_config(limits, DType::F32),
    rule: Some(|limits, shape| {
        let (m, n, k) = mnk(shape);
        let (p, why) = gemv::kmajor::KmajorParams::rule(limits, m, n, k, DType::F32);
        (p.config(), why)
    }),
    pays: always,
    describe: |config| gemv::kmajor::describe_config(config, DType::F32),
    build: |shape, config| {
        let (m, n, k) = mnk(shape);
        gemv::kmajor::build(m, n, k, DType::F32, config)
    },
};

/// The K-major skinny-product template registered on the `gemv-kmajor-f16` op.
pub const GEMV_KMAJOR_F16: TemplateSpec = TemplateSpec {
    default: |limits| gemv::kmajor::default_config(limits, DType::F16),
    rule: Some(|limits, shape| {
        let (m, n, k) = mnk(shape);
        let (p, why) = gemv::kmajor::KmajorParams::rule(limits, m, n, k, DType::F16);
        (p.config(), why)
    }),
    describe: |config| gemv::kmajor::describe_config(config, DType::F16),
    build: |shape, config| {
        let (m, n, k) = mnk(shape);
        gemv::kmajor::build(m, n, k, DType::F16, config)
    },
    ..GEMV_KMAJOR
};

/// `conv2d`'s `implicit-gemm`: the matmul template's space over views and configs.
pub const CONV2D: TemplateSpec = TemplateSpec {
    schedule: "implicit-gemm",
    params: matmul::OP_PARAMS,
    space: matmul::op_space_over_views,
    default: matmul::default_config_over_views,
    rule: Some(|limits, shape| implicit_gemm::op_rule(limits, &geometry(shape), false)),
    pays: |_, shape, config| implicit_gemm::op_pays(&geometry(shape), false, config),
    describe: matmul::op_describe,
    build: |shape, config| implicit_gemm::build(&geometry(shape), &conv::CONV2D, config),
};

/// `conv2d-bias-relu`'s `implicit-gemm`: the matmul template's space, and `fuse`.
pub const CONV2D_BIAS_RELU: TemplateSpec = TemplateSpec {
    params: implicit_gemm::BIAS_RELU_PARAMS,
    describe: implicit_gemm::describe_bias_relu,
    build: |shape, config| {
        implicit_gemm::build_bias_relu(&geometry(shape), &conv::CONV2D_BIAS_RELU, config)
    },
    ..CONV2D
};

/// An fp16 convolution's `implicit-gemm`, built by `build`: the fp16 matmul template's
/// space over views.
const fn f16_conv(build: fn(&Shape, &Config) -> Result<Func, BuildError>) -> TemplateSpec {
    TemplateSpec {
        schedule: "implicit-gemm",
        params: matmul_f16::OP_PARAMS,
        space: matmul_f16::op_space_over_views,
        default: matmul_f16::default_config_over_views,
        rule: Some(|limits, shape| implicit_gemm::op_rule(limits, &geometry(shape), true)),
        pays: |_, shape, config| implicit_gemm::op_pays(&geometry(shape), true, config),
        describe: matmul_f16::op_describe_over_views,
        build,
    }
}

/// `conv2d-f16`'s `implicit-gemm` (NHWC).
pub const CONV2D_F16: TemplateSpec =
    f16_conv(|shape, config| build_conv(shape, &conv::CONV2D_F16, config));
/// `conv2d-f16-bias-relu`'s `implicit-gemm` (NHWC, bias and ReLU fused).
pub const CONV2D_F16_BIAS_RELU: TemplateSpec =
    f16_conv(|shape, config| build_conv(shape, &conv::CONV2D_F16_BIAS_RELU, config));
/// `conv2d-f16-nchw`'s `implicit-gemm`.
pub const CONV2D_F16_NCHW: TemplateSpec =
    f16_conv(|shape, config| build_conv(shape, &conv::CONV2D_F16_NCHW, config));

/// A convolution op's geometry.
fn geometry(shape: &Shape) -> weft_kernels::conv_views::ConvGeometry {
    Dims::of(shape).geometry()
}

/// The implicit GEMM of variant `v` at a convolution op's shape.
fn build_conv(shape: &Shape, v: &Variant, config: &Config) -> Result<Func, BuildError> {
    implicit_gemm::build(&geometry(shape), v, config)
}

/// A grouped convolution's `implicit-gemm` (fp16: `f16`), of variant `v`: the batched
/// product of the matmul template of its type, never split.
const fn grouped(f16: bool) -> TemplateSpec {
    TemplateSpec {
        schedule: "implicit-gemm",
        params: if f16 {
            matmul_f16::PARAMS
        } else {
            matmul::PARAMS
        },
        space: if f16 {
            |limits| grouped_conv::space(limits, true)
        } else {
            |limits| grouped_conv::space(limits, false)
        },
        default: if f16 {
            matmul_f16::default_config_over_views
        } else {
            matmul::default_config
        },
        rule: Some(if f16 {
            |limits, shape| grouped_rule(limits, shape, true)
        } else {
            |limits, shape| grouped_rule(limits, shape, false)
        }),
        pays: always,
        describe: if f16 {
            matmul_f16::describe
        } else {
            matmul::describe
        },
        build: if f16 {
            |shape, config| build_grouped(shape, &crate::conv::GROUPED_F16, config)
        } else {
            |shape, config| build_grouped(shape, &crate::conv::GROUPED, config)
        },
    }
}

/// `grouped-conv2d`'s `implicit-gemm` (f32 NCHW).
pub const GROUPED_CONV2D: TemplateSpec = grouped(false);
/// `grouped-conv2d-f16`'s `implicit-gemm` (f16 NHWC, tensor cores).
pub const GROUPED_CONV2D_F16: TemplateSpec = grouped(true);

fn grouped_rule(limits: &TargetLimits, shape: &Shape, f16: bool) -> (Config, String) {
    let (g, groups) = (
        crate::conv::geometry_grouped(shape),
        crate::conv::groups(shape),
    );
    grouped_conv::op_rule(limits, &g, groups, f16)
}

fn build_grouped(shape: &Shape, v: &Variant, config: &Config) -> Result<Func, BuildError> {
    let (g, groups) = (
        crate::conv::geometry_grouped(shape),
        crate::conv::groups(shape),
    );
    grouped_conv::build(&g, groups, v, config)
}

/// The template registered on the `depthwise-conv2d` op as its `tuned` schedule.
pub const DEPTHWISE: TemplateSpec = TemplateSpec {
    schedule: "tuned",
    params: depthwise::PARAMS,
    space: depthwise::space,
    default: depthwise::default_config,
    rule: None,
    pays: always,
    describe: depthwise::describe,
    build: |shape, config| {
        let g = |n: &str| shape.get(n);
        depthwise::build(
            [g("b"), g("c"), g("h"), g("w")],
            g("k"),
            g("stride"),
            config,
        )
    },
};

/// The template registered on the `depthwise-conv2d-f16` op as its `tuned` schedule:
/// the depthwise template over f16 NHWC views, with its NHWC rule.
pub const DEPTHWISE_F16: TemplateSpec = TemplateSpec {
    schedule: "tuned",
    params: depthwise::PARAMS,
    space: depthwise::space,
    default: depthwise::default_config,
    rule: Some(|limits, shape| {
        let (config, why) = depthwise::rule_config(
            limits,
            shape.get("k"),
            shape.get("stride"),
            weft_kernels::conv_views::ConvLayout::Nhwc,
        );
        (config, format!("rule: {why}"))
    }),
    pays: always,
    describe: depthwise::describe,
    build: |shape, config| {
        let g = |n: &str| shape.get(n);
        depthwise::build_f16_nhwc(
            [g("b"), g("c"), g("h"), g("w")],
            g("k"),
            g("stride"),
            config,
        )
    },
};

/// The template registered on the `winograd-conv2d` op (schedule `winograd`): the 16
/// products take the matmul template's space and configs.
pub const WINOGRAD: TemplateSpec = TemplateSpec {
    schedule: "winograd",
    params: matmul::PARAMS,
    space: matmul::space,
    default: matmul::default_config,
    rule: Some(|limits, shape| winograd::op_rule(limits, &Dims::of(shape).winograd())),
    pays: always,
    describe: matmul::describe,
    build: |shape, config| winograd::build(&Dims::of(shape).winograd(), config),
};

/// The `attention-f16` op's shape: heads, query rows, keys, head size; causal or not.
fn attention_dims(shape: &Shape) -> ((i64, i64, i64, i64), bool) {
    let g = |n: &str| shape.get(n);
    ((g("bh"), g("s"), g("t"), g("d")), g("causal") != 0)
}

/// The template registered on the `attention-f16` op.
pub const ATTENTION: TemplateSpec = TemplateSpec {
    schedule: "template",
    params: attention::PARAMS,
    space: attention::space,
    default: attention::op_default,
    rule: Some(|limits, shape| {
        let (hstd, causal) = attention_dims(shape);
        attention::op_rule(limits, hstd, causal)
    }),
    pays: |limits, shape, config| attention::op_fits(limits, shape.get("d"), config),
    describe: attention::op_describe,
    build: |shape, config| {
        let (hstd, causal) = attention_dims(shape);
        attention::build(hstd, causal, config)
    },
};
