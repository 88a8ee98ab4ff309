//! weft-kernels: the kernel library. Kernel templates (Hidet's template-based
//! scheduling, seed 002 section 5.1.3): tensor programs written directly with task
//! mappings ([`weft_ir::template`]), each with a hardware-centric schedule space —
//! parameters drawn from what the target offers a block
//! ([`TargetLimits`](weft_codegen_common::TargetLimits): threads, shared memory,
//! registers, matrix units), not from the divisors of the input size, with predicated
//! loads at tile edges so that every config is right at every size — the stated rules
//! and cost models that pick a config when no tuning record applies ([`rule`]), and the
//! rule-based injective and reduction schedules ([`rules`]).
//!
//! Every entry point is typed by what it builds: a product's `m`, `n`, `k`, a
//! convolution's [`conv_views::ConvGeometry`], a depthwise convolution's sizes,
//! Winograd's [`winograd::WinogradDims`], attention's heads, rows, keys and head size —
//! and a [`Config`], a point of the template's space; the `template_over` forms (matmuls,
//! rows, attention) build over te buffers of those sizes, views included. Two clients
//! build through them: the benchmark workloads (`weft-ops`, which map a workload's named
//! shape onto them) and the whole-model compiler (`weft-model`, over a partition group's
//! values). Nothing here knows either.
//!
//! | template | builds | entry points |
//! | --- | --- | --- |
//! | [`matmul`] | double-buffered fp32 tiles, any M, N, K | `build(m, n, k, config)`, `template_over` |
//! | [`matmul_f16`] | fp16 tiles on tensor cores / cooperative / simdgroup matrices (CUDA cores where there are none), fp32 accumulation; `hopper` for sm_90a | `build(m, n, k, config)`, `template_over` |
//! | [`gemv`] | few-row products (`m` ≤ 8: decode) streaming `b` with 16-byte loads, sums combined by shuffles and shared memory | `template_over` |
//! | [`implicit_gemm`] | a convolution as [`matmul`] or [`matmul_f16`] over fused im2col prologues ([`conv_views`]) | `build(geometry, variant, config)` |
//! | [`depthwise`] | output tiles × channel planes, input in shared memory or registers; NCHW or NHWC (channels fastest), f32 or f16 loads over views | `build([b, c, h, w], k, stride, config)`, `build_f16_nhwc`, `template_over` |
//! | [`winograd`] | F(2×2, 3×3), four kernels around a batched [`matmul`] | `build(dims, config)` |
//! | [`rows`] | softmax, layer norm, reductions of rows; long rows over two kernels | `template_over` |
//! | [`attention`] | flash-attention style, one kernel | `build(dims, causal, config)`, `template_over` |
//!
//! What the matmul kernels share (how a block's threads cover a tile's loads, the block
//! swizzle) is in the private `tiling` module; [`split_k`] splits a product's reduction,
//! [`product`] builds either matmul template by element type, and [`conv`] holds the te
//! pieces a convolution is written with. This module holds the [`Config`] type and grid
//! helpers every template uses. The tuner (`weft tune`) enumerates a template's space
//! for a target, builds every config, times them and records the best.

pub mod attention;
pub mod conv;
pub mod conv_views;
pub mod depthwise;
pub mod gemv;
pub mod grouped_conv;
pub mod implicit_gemm;
pub mod matmul;
pub mod matmul_f16;
pub mod product;
pub mod rows;
pub mod rule;
pub mod rules;
pub mod split_k;
pub mod split_last;
mod tiling;
pub mod winograd;

use std::fmt;

use weft_ir::echo;
use weft_ir::template::TemplateError;

/// True if `value` (threads, bytes, registers a config plans) is within a target's
/// `limit` (`TargetLimits`' fields are unsigned; a config's counts are `i64`).
pub(crate) fn within(value: i64, limit: u64) -> bool {
    u64::try_from(value).is_ok_and(|v| v <= limit)
}

/// One point of a schedule space: named integer parameters, in the template's order.
/// Printed and parsed as `name=value,...` (`wm=2,wn=4,...`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config(pub Vec<(String, i64)>);

impl Config {
    /// The value of parameter `name`, if the config has it.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    /// Parses `name=value,...`; a name given twice is an error naming it.
    pub fn parse(text: &str) -> Result<Config, String> {
        let mut out: Vec<(String, i64)> = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("{} is not of the form name=value", echo(part)))?;
            let (k, v) = (k.trim(), v.trim());
            let v: i64 = v
                .parse()
                .map_err(|_| format!("{} (for {}) is not an integer", echo(v), echo(k)))?;
            // Refused rather than the last one winning: `bk=8,bk=16` is a typo for
            // another parameter, and tuning or timing the wrong config hides it.
            if let Some((_, first)) = out.iter().find(|(n, _)| n == k) {
                return Err(format!(
                    "parameter {} is given twice (values {first} and {v})",
                    echo(k)
                ));
            }
            out.push((k.to_string(), v));
        }
        Ok(Config(out))
    }
}

impl Config {
    /// The config of a template's `params` (in order) with `values`.
    pub(crate) fn of(params: &[(&str, &str)], values: impl IntoIterator<Item = i64>) -> Config {
        Config(
            params
                .iter()
                .zip(values)
                .map(|((n, _), v)| (n.to_string(), v))
                .collect(),
        )
    }

    /// The error of this config for `reason`.
    pub(crate) fn invalid(&self, reason: String) -> BuildError {
        BuildError::Config {
            config: self.to_string(),
            reason,
        }
    }

    /// Checks that every parameter given is one of `params`, those of the `template`
    /// template.
    pub(crate) fn known(&self, params: &[(&str, &str)], template: &str) -> Result<(), BuildError> {
        match self
            .0
            .iter()
            .find(|(n, _)| !params.iter().any(|(p, _)| p == n))
        {
            Some((n, _)) => {
                let names: Vec<&str> = params.iter().map(|(p, _)| *p).collect();
                Err(self.invalid(format!(
                    "unknown parameter {}; the {template} template's are {}",
                    echo(n),
                    names.join(", ")
                )))
            }
            None => Ok(()),
        }
    }

    /// The value of parameter `name`, an error naming it when missing.
    pub(crate) fn value(&self, name: &str) -> Result<i64, BuildError> {
        self.get(name)
            .ok_or_else(|| self.invalid(format!("parameter `{name}` is missing")))
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        f.write_str(&parts.join(","))
    }
}

/// Why a template could not be built at a config.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The config is not a point of the template's space.
    #[error("config {}: {reason}", echo(config))]
    Config { config: String, reason: String },
    /// The template made a mistake building its IR (a bug of the template).
    #[error(transparent)]
    Template(#[from] TemplateError),
}

/// The linear index of the running block in a grid from [`grid_for`].
pub(crate) fn block_index(
    kb: &mut weft_ir::template::KernelBuilder,
    grid: [i64; 2],
) -> weft_ir::expr::Expr {
    if grid[1] > 1 {
        kb.let_("pid", kb.block_y() * grid[0] + kb.block_x())
    } else {
        kb.block_x()
    }
}

/// Adds to `t` a kernel of one thread per item of `0..total`, `threads` a block; `body`
/// gets the item's index (threads past `total` do nothing).
pub fn per_item(
    t: &mut weft_ir::template::Template,
    total: i64,
    threads: i64,
    body: impl FnOnce(&mut weft_ir::template::KernelBuilder, weft_ir::expr::Expr),
) {
    let grid = grid_for(ceil_div(total, threads));
    t.kernel(grid, threads, |kb| {
        let block = block_index(kb, grid);
        let idx = kb.let_("idx", block * threads + kb.thread_x());
        kb.if_(idx.clone().lt(total), |kb| body(kb, idx));
    });
}

/// `ceil(a / b)` for positive `b` (`i64::div_ceil` is not stable for signed integers).
pub(crate) fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// A launch grid of `blocks` blocks with at most 65535 per dimension (WebGPU's limit): a
/// larger grid is two-dimensional and its surplus blocks do nothing.
pub(crate) fn grid_for(blocks: i64) -> [i64; 2] {
    if blocks <= 65535 {
        [blocks, 1]
    } else {
        let gy = ceil_div(blocks, 65535);
        [ceil_div(blocks, gy), gy]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_given_twice_is_refused() {
        let e = Config::parse("bk=8,wm=2,bk=16").unwrap_err();
        assert_eq!(e, "parameter `bk` is given twice (values 8 and 16)");
        let c = Config::parse("bk=8, wm=2").unwrap();
        assert_eq!((c.get("bk"), c.get("wm")), (Some(8), Some(2)));
    }
}
