//! Split-K for the matmul-template anchors (the parallel k reduction the Hidet paper
//! reuses from CUTLASS for convolution): where a product has few output tiles and a long
//! reduction — ResNet-50's 7×7 layers have 32 tiles and 4608-long sums — one kernel
//! computes `splits` partial products side by side (the template's batched form: one
//! grid layer per split, each over its slice of k), and a second kernel sums the partials
//! and applies the epilogue chain once, in f32, by the reduction rule.

use weft_ir::func::{Func, Param, Stmt};
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_ir::template::TemplateError;
use weft_ops::templates::Config;
use weft_ops::templates::matmul::{self, MatmulParams};
use weft_ops::templates::matmul_f16::{self, F16Params};

use super::rules;

/// The template that computes the partial products, with its config.
pub(crate) enum Product {
    /// The fp32 matmul template.
    F32(MatmulParams),
    /// The fp16 matmul template (f16 operands, f32 partials).
    F16(F16Params),
}

impl Product {
    /// `config` of the fp16 template (`f16`) or the fp32 one, checked, with the
    /// template's description of it (`the fp16 matmul template: 64x64x32 tile, ...`).
    pub(crate) fn of(f16: bool, config: &Config) -> Result<(Product, String), String> {
        if f16 {
            let p = F16Params::from_config(config).map_err(|e| e.to_string())?;
            let what = matmul_f16::describe(config).unwrap_or_else(|e| e);
            Ok((Product::F16(p), format!("fp16 matmul template: {what}")))
        } else {
            let p = MatmulParams::from_config(config).map_err(|e| e.to_string())?;
            let what = matmul::describe(config).unwrap_or_else(|e| e);
            Ok((Product::F32(p), format!("matmul template: {what}")))
        }
    }

    /// The template's `c = a @ b` over given tensors (rank 3: batched).
    pub(crate) fn template_over(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        c: &Buffer,
    ) -> Result<Func, TemplateError> {
        match self {
            Product::F32(p) => matmul::template_over(name, a, b, c, p),
            Product::F16(p) => matmul_f16::template_over(name, a, b, c, p),
        }
    }

    fn bk(&self) -> i64 {
        match self {
            Product::F32(p) => p.bk,
            Product::F16(p) => p.bk,
        }
    }
}

/// The pieces of a split product: the partial sums (`[splits, m, n]`), and their sum, a
/// te compute over them, which the epilogue reads where an unsplit anchor's result was.
pub(crate) struct Split {
    pub(crate) splits: i64,
    pub(crate) partial: Buffer,
    pub(crate) sum: Buffer,
}

impl Split {
    /// The buffers for an `m × n` product in `splits` parts.
    pub(crate) fn new(m: i64, n: i64, splits: i64) -> Split {
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
        }
    }

    /// The two kernels: `a @ b` (te views `[m, k]` and `[k, n]`) in `splits` partial
    /// products on the template `p` names, then `output` (the epilogue over
    /// [`Split::sum`]) by the reduction rule. `inputs` are the buffers the epilogue reads
    /// besides the partials.
    pub(crate) fn build(
        &self,
        name: &str,
        a: &Buffer,
        b: &Buffer,
        output: &Buffer,
        p: &Product,
    ) -> Result<Func, String> {
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
                te::if_then_else(
                    kk.clone().lt(k),
                    b.at(&[kk, ix[2].clone()]),
                    Expr::zero(b.dtype()),
                )
            },
        );
        let products = p
            .template_over(name, &a3, &b3, &self.partial)
            .map_err(|e| e.to_string())?;
        let products = fuse(&products, &self.partial)
            .map_err(|e| format!("fusing the split product's views: {e}"))?
            .func;
        let combine = rules::reduction(
            &format!("{name}_sum"),
            std::slice::from_ref(&self.partial),
            &self.sum,
            output,
        )?;
        Ok(join(name, products, combine, &self.partial))
    }
}

/// One function of `first` then `second`, which communicate through `temp` (a global
/// temporary of the result, no longer a parameter).
pub(crate) fn join(name: &str, first: Func, second: Func, temp: &Buffer) -> Func {
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
    hints.resize(1, Default::default());
    hints.extend(second.kernel_hints);
    Func {
        name: name.to_string(),
        params,
        allocs,
        body: Stmt::seq(vec![first.body, second.body]),
        kernel_hints: hints,
    }
}
