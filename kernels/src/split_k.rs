//! Split-K (the parallel k reduction the Hidet paper reuses from CUTLASS for
//! convolution): where a product has few output tiles and a long reduction — a
//! 197×768×3072 projection has 24 tiles of 128×64, ResNet-50's 7×7 layers 32 tiles and
//! 4608-long sums — one kernel computes `sk` partial products side by side (the matmul
//! template's batched form: one grid layer per part, each over its slice of k), and a
//! second kernel sums the partials and applies the epilogue (bias, residual,
//! activation, the cast to fp16) once, in f32, by the reduction rule
//! ([`crate::rules::reduction`]). The partials are `sk · m · n` f32 written and read
//! once: no atomics, so every target runs it and the sum's order is fixed.
//!
//! The ops' templates take it as a parameter, `sk` ([`PARAM`]; 1 or absent: the product
//! whole), which their spaces offer for the larger tiles ([`with_splits`]) and the
//! tuner tries only where it can pay ([`pays`]); the stated rule
//! ([`super::rule::split_k`]) picks it without a record, and the whole-model compiler
//! uses the same pieces ([`Split`], [`join`]) for its anchors.

use weft_ir::func::{Func, Param, Stmt};
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_ir::template::TemplateError;

use super::rule::MAX_SPLITS;
use super::split_last::LastPart;
use super::{BuildError, Config};

use crate::rules;

/// The split parameter of the split-capable templates (matmul, matmul-f16, the
/// implicit-GEMM convolutions).
pub const PARAM: (&str, &str) = (
    "sk",
    "parts the reduction is split into, summed by a second kernel (1 or absent: none; at most 64)",
);

/// The split factors the spaces offer (the rule weighs the same,
/// [`super::rule::SPLIT_FACTORS`]).
pub const FACTORS: [i64; 6] = super::rule::SPLIT_FACTORS;

/// The smallest block tile (rows × columns) the spaces offer split: a smaller tile
/// gives more blocks by itself, without partials to write and sum.
pub const MIN_SPLIT_AREA: i64 = 64 * 64;

/// A config's template part (without `sk`) and its `sk` (1 where absent), checked.
pub fn parts(config: &Config) -> Result<(Config, i64), BuildError> {
    let rest = Config(
        config
            .0
            .iter()
            .filter(|(n, _)| n != PARAM.0)
            .cloned()
            .collect(),
    );
    match config.get(PARAM.0).unwrap_or(1) {
        sk @ 1..=MAX_SPLITS => Ok((rest, sk)),
        sk => Err(config.invalid(format!("`sk` = {sk} must be in 1..={MAX_SPLITS}"))),
    }
}

/// `config` split in `splits` parts (`sk` appended; unchanged for 1).
pub fn split(mut config: Config, splits: i64) -> Config {
    if splits > 1 {
        config.0.push((PARAM.0.to_string(), splits));
    }
    config
}

/// `configs` followed by each of them whose block tile `tile` gives as at least
/// [`MIN_SPLIT_AREA`] or as one row (a row tile, for products of one row, which only a
/// split reduction parallelizes; `None` for configs it cannot read), split by each of
/// [`FACTORS`]: a template's space with split-K.
pub fn with_splits(
    configs: Vec<Config>,
    tile: impl Fn(&Config) -> Option<(i64, i64)>,
) -> Vec<Config> {
    let mut out = configs.clone();
    for c in configs {
        if tile(&c).is_some_and(|(bm, bn)| bm * bn >= MIN_SPLIT_AREA || bm == 1) {
            out.extend(FACTORS.iter().map(|&sk| split(c.clone(), sk)));
        }
    }
    out
}

/// Whether splitting can pay ([`super::rule::split_pays`]: the rule's judgement, which
/// the tuner shares).
pub use super::rule::split_pays as pays;

/// [`pays`] for `config` at an `m × n × k` product, its block tile read by `tile` (`None`:
/// a config the template cannot read, left to the build to refuse, as is a bad `sk`).
pub fn config_pays(
    (m, n, k): (i64, i64, i64),
    config: &Config,
    tile: impl Fn(&Config) -> Option<(i64, i64)>,
) -> bool {
    match parts(config) {
        Ok((rest, sk)) => tile(&rest).is_none_or(|block| pays(m, n, k, block, sk)),
        Err(_) => true,
    }
}

/// A config's description by the template's `describe`, with its split.
pub fn describe(
    config: &Config,
    template: fn(&Config) -> Result<String, String>,
) -> Result<String, String> {
    let (rest, sk) = parts(config).map_err(|e| e.to_string())?;
    let what = template(&rest)?;
    Ok(match sk {
        1 => what,
        sk => format!("{what}, k split in {sk} parts + a summing kernel"),
    })
}

/// The op `c = a @ b` (`A [m, k]`, `B [k, n]`, `C [m, n]` of `dtype`, accumulated in
/// f32) on the template `t` in `splits` parts.
pub fn product_op(
    name: &str,
    [m, n, k]: [i64; 3],
    dtype: DType,
    t: &dyn Anchor,
    splits: i64,
) -> Result<Func, String> {
    let a = te::placeholder("A", &[m, k], dtype);
    let b = te::placeholder("B", &[k, n], dtype);
    let split = Split::new(m, n, splits);
    let sum = split.sum.clone();
    let c = te::compute("C", &[("i", m), ("j", n)], |ix| match dtype {
        DType::F32 => sum.at(ix),
        _ => te::cast(sum.at(ix), dtype),
    });
    split.build(name, &a, &b, &c, t)
}

/// A matmul template that computes the partial products: its `c = a @ b` over given
/// tensors (rank 3: one grid layer per part) and its k step.
pub trait Anchor {
    /// The template's `c = a @ b` over given tensors, into which views are then fused.
    fn template_over(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        c: &Buffer,
    ) -> Result<Func, TemplateError>;
    /// The k extent of a block's step: each part's slice of k is a whole number of them.
    fn bk(&self) -> i64;
    /// Whether the template splits k itself (Hopper's path): its partial products read
    /// `a` and `b` whole (placeholders TMA copies, or views the threads gather), each
    /// grid layer of the `[splits, m, n]` output walking its own k range.
    fn splits_in_place(&self) -> bool {
        false
    }
    /// Whether the template has the form whose last part sums
    /// ([`Anchor::template_over_last`]).
    fn sums_last(&self) -> bool {
        false
    }
    /// The template's partial products into `partial` (`[splits, m, n]`, rank-3 `a` and
    /// `b` as for [`Anchor::template_over`]), each tile's last part summing them into
    /// `last.sum` ([`crate::split_last`]). Only where [`Anchor::sums_last`].
    fn template_over_last(
        &self,
        name: &str,
        _a: &Buffer,
        _b: &Buffer,
        _partial: &Buffer,
        _last: LastPart,
    ) -> Result<Func, TemplateError> {
        Err(TemplateError::Invalid {
            template: name.to_string(),
            what: "has no form whose last part sums a split product".into(),
        })
    }
}

/// The pieces of a split product: the partial sums (`[splits, m, n]`), and their sum, a
/// te compute over them, which the epilogue reads where an unsplit anchor's result was.
pub struct Split {
    pub splits: i64,
    pub partial: Buffer,
    pub sum: Buffer,
    /// Whether the target's blocks can hand each other results, so that a template's
    /// last part may sum ([`Split::last_part_sums`]).
    pub device_fence: bool,
}

impl Split {
    /// The buffers for an `m × n` product in `splits` parts.
    pub fn new(m: i64, n: i64, splits: i64) -> Split {
        let partial = te::placeholder("partial", &[splits, m, n], DType::F32);
        let rz = te::reduce_axis("rz", splits);
        let sum = te::compute("ksum", &[("i", m), ("j", n)], |ix| {
            te::sum(
                partial.at(&[rz.expr(), ix[0].clone(), ix[1].clone()]),
                &[&rz],
            )
        });
        Split {
            splits,
            partial,
            sum,
            device_fence: false,
        }
    }

    /// The same, summed by each tile's last part where the target can
    /// (`device_fence`: [`weft_codegen_common::TargetLimits::device_fence`]) and the
    /// template has that form.
    pub fn on_target(mut self, device_fence: bool) -> Split {
        self.device_fence = device_fence;
        self
    }

    /// Whether [`Split::build`] on `p` gives one kernel whose last part sums (else the
    /// parts, then a summing kernel).
    pub fn last_part_sums(&self, p: &dyn Anchor) -> bool {
        self.device_fence && p.sums_last() && !p.splits_in_place()
    }

    /// How the parts are summed, for `weft model graph`: `split-K 4, the last part sums`
    /// or `split-K 4 + a summing kernel`.
    pub fn describe(&self, p: &dyn Anchor) -> String {
        if self.last_part_sums(p) {
            format!("split-K {}, the last part sums", self.splits)
        } else {
            format!("split-K {} + a summing kernel", self.splits)
        }
    }

    /// The two kernels: `a @ b` (te views `[m, k]` and `[k, n]`) in `splits` partial
    /// products on the template `p` names, then `output` (the epilogue over
    /// [`Split::sum`]) by the reduction rule. `inputs` are the buffers the epilogue reads
    /// besides the partials.
    pub fn build(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        output: &Buffer,
        p: &dyn Anchor,
    ) -> Result<Func, String> {
        if self.last_part_sums(p) {
            return self.last_over_views(name, a, b, output, p);
        }
        let products = if p.splits_in_place() {
            let products = p
                .template_over(name, a, b, &self.partial)
                .map_err(|e| e.to_string())?;
            // Over computed operands (an im2col) the views are fused into the loads.
            if a.producer().is_some() || b.producer().is_some() {
                fuse(&products, &self.partial)
                    .map_err(|e| format!("fusing the split product's views: {e}"))?
                    .func
            } else {
                products
            }
        } else {
            self.products_over_views(name, a, b, p)?
        };
        let combine = rules::reduction(
            &format!("{name}_sum"),
            std::slice::from_ref(&self.partial),
            &self.sum,
            output,
        )?;
        Ok(join(name, products, combine, &self.partial))
    }

    /// The one kernel whose last part sums ([`crate::split_last`]): the partial
    /// products over the views, the sum stored where the summing kernel stored it, and
    /// `output`'s epilogue fused into that store. The partials become a temporary.
    fn last_over_views(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        output: &Buffer,
        p: &dyn Anchor,
    ) -> Result<Func, String> {
        let (a3, b3) = self.views(a, b, p);
        let last = LastPart {
            sum: &self.sum,
            splits: self.splits,
        };
        let mut func = p
            .template_over_last(name, &a3, &b3, &self.partial, last)
            .map_err(|e| e.to_string())?;
        func.params
            .retain(|q| !matches!(q, Param::Buffer(b) if *b == self.partial));
        func.allocs.push(self.partial.clone());
        Ok(fuse(&func, output)
            .map_err(|e| format!("fusing the split product's views and epilogue: {e}"))?
            .func)
    }

    /// The partial products on a template that splits through views: each part's slice
    /// of k as te computes over `a` and `b`, fused into the template's loads.
    fn products_over_views(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        p: &dyn Anchor,
    ) -> Result<Func, String> {
        let (a3, b3) = self.views(a, b, p);
        let products = p
            .template_over(name, &a3, &b3, &self.partial)
            .map_err(|e| e.to_string())?;
        Ok(fuse(&products, &self.partial)
            .map_err(|e| format!("fusing the split product's views: {e}"))?
            .func)
    }

    /// `a` and `b` as `[splits, m, chunk]` and `[splits, chunk, n]`: each part's slice of
    /// k, zero past it.
    fn views(&self, a: &Buffer, b: &Buffer, p: &dyn Anchor) -> (Buffer, Buffer) {
        let (m, k) = (a.shape()[0], a.shape()[1]);
        let n = b.shape()[1];
        // Each split's slice of k, a whole number of the template's k steps.
        let chunk = (k + self.splits - 1) / self.splits;
        let chunk = (chunk + p.bk() - 1) / p.bk() * p.bk();
        let a3 = te::compute(
            "a_split",
            &[("z", self.splits), ("i", m), ("kk", chunk)],
            |ix| {
                let kk = ix[0].clone() * chunk + ix[2].clone();
                te::if_then_else(
                    kk.clone().lt(k),
                    a.at(&[ix[1].clone(), kk]),
                    Expr::zero(a.dtype()),
                )
            },
        );
        let b3 = te::compute(
            "b_split",
            &[("z", self.splits), ("kk", chunk), ("j", n)],
            |ix| {
                let kk = ix[0].clone() * chunk + ix[1].clone();
                // The row clamped as well as the load predicated: in bounds either way,
                // which the prover sees at once through a filter view's (r, s, c) digits
                // (B's vectors run along j, so the clamp costs them nothing).
                te::if_then_else(
                    kk.clone().lt(k),
                    b.at(&[kk.min(k - 1), ix[2].clone()]),
                    Expr::zero(b.dtype()),
                )
            },
        );
        (a3, b3)
    }
}

/// One function of `first` then `second`, which communicate through `temp` (a global
/// temporary of the result, no longer a parameter). Either may hold several kernels;
/// each keeps its hints.
pub fn join(name: &str, first: Func, second: Func, temp: &Buffer) -> Func {
    let mut params: Vec<Param> = Vec::new();
    let outputs: Vec<Param> = second.params.last().cloned().into_iter().collect();
    for p in first
        .params
        .iter()
        .chain(&second.params[..second.params.len().saturating_sub(1)])
    {
        let is_temp = matches!(p, Param::Buffer(b) if b == temp);
        if !is_temp && !params.contains(p) {
            params.push(p.clone());
        }
    }
    params.extend(outputs);
    let mut allocs = first.allocs;
    allocs.push(temp.clone());
    allocs.extend(second.allocs);
    let mut hints = first.kernel_hints;
    // One hint per kernel, that is per root-level statement of `first`.
    hints.resize(first.body.items().len(), Default::default());
    hints.extend(second.kernel_hints);
    Func {
        name: name.to_string(),
        params,
        allocs,
        body: Stmt::seq(vec![first.body, second.body]),
        kernel_hints: hints,
    }
}
