//! The matmul template an implicit GEMM or a model's anchor is built on, by element type:
//! [`Matmul`] holds a checked config of the fp32 template ([`super::matmul`]) or of the
//! fp16 one ([`super::matmul_f16`]) and builds either the same way, whole or as the
//! parts of a split ([`super::split_k::Anchor`]).

use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::template::TemplateError;

use super::matmul::{self, MatmulParams};
use super::matmul_f16::{self, F16Params};
use super::split_k::Anchor;
use super::{BuildError, Config};

/// A checked config of the fp32 or the fp16 matmul template.
pub enum Matmul {
    /// The fp32 matmul template.
    F32(MatmulParams),
    /// The fp16 matmul template (f16 operands, f32 accumulation).
    F16(F16Params),
}

impl Matmul {
    /// `config` of the fp16 template (`f16`) or the fp32 one, checked, with the
    /// template's description of it (`fp16 matmul template: 64x64x32 tile, ...`).
    pub fn of(f16: bool, config: &Config) -> Result<(Matmul, String), String> {
        let t = Matmul::from_config(f16, config).map_err(|e| e.to_string())?;
        let what = match f16 {
            true => format!(
                "fp16 matmul template: {}",
                matmul_f16::describe(config).unwrap_or_else(|e| e)
            ),
            false => format!(
                "matmul template: {}",
                matmul::describe(config).unwrap_or_else(|e| e)
            ),
        };
        Ok((t, what))
    }

    /// `config` of the fp16 template (`f16`) or the fp32 one, checked.
    pub fn from_config(f16: bool, config: &Config) -> Result<Matmul, BuildError> {
        Ok(if f16 {
            Matmul::F16(F16Params::from_config(config)?)
        } else {
            Matmul::F32(MatmulParams::from_config(config)?)
        })
    }

    /// The block tile, rows × columns.
    pub fn block(&self) -> (i64, i64) {
        match self {
            Matmul::F32(p) => (p.block_m(), p.block_n()),
            Matmul::F16(p) => (p.block_m(), p.block_n()),
        }
    }
}

impl Anchor for Matmul {
    fn template_over(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        c: &Buffer,
    ) -> Result<Func, TemplateError> {
        match self {
            Matmul::F32(p) => p.template_over(name, a, b, c),
            Matmul::F16(p) => p.template_over(name, a, b, c),
        }
    }

    fn bk(&self) -> i64 {
        match self {
            Matmul::F32(p) => p.bk,
            Matmul::F16(p) => p.bk,
        }
    }

    fn splits_in_place(&self) -> bool {
        matches!(self, Matmul::F16(p) if p.warpgroups > 0)
    }

    fn sums_last(&self) -> bool {
        match self {
            Matmul::F32(p) => p.sums_last(),
            Matmul::F16(p) => p.sums_last(),
        }
    }

    fn template_over_last(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        partial: &Buffer,
        last: crate::split_last::LastPart,
    ) -> Result<Func, TemplateError> {
        match self {
            Matmul::F32(p) => p.template_over_last(name, a, b, partial, last),
            Matmul::F16(p) => p.template_over_last(name, a, b, partial, last),
        }
    }
}
