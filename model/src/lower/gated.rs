//! A skinny product's group that stores a gated MLP's activation (`Group::gated`, folded
//! by `weft_graph::partition::gated` where `CompileOptions::gated_store` asks): the
//! gate/up product on `weft_kernels::gemv::template_gated`, which stores `silu(gate) ·
//! up` and never the product.

use weft_codegen_common::TargetLimits;
use weft_graph::Graph;
use weft_graph::partition::Gated;
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_kernels::gemv::{self, GemvParams, RowNorm};

use super::resident::gemv_resident;
use super::values::{Values, reindex};
use crate::anchor::AnchorKey;
use crate::error::LowerError;

/// The product a gated group lowers: `m` rows, `n` columns (both halves).
pub(super) struct GatedProduct<'a, 'g> {
    pub g: &'g Graph,
    pub gated: Gated,
    pub name: &'a str,
    pub m: i64,
    pub n: i64,
    /// The type the template multiplies in.
    pub operand: DType,
    pub limits: &'a TargetLimits,
}

/// Lowers the gated product `gp` over `a` and `b` (the product's operands as the
/// template reads them, with the folded norm and its words where there is one) with
/// params `p` and why they were chosen; `output` gives the group's stored output (the
/// Mul's, rounded to its storage type) from `vals`.
pub(super) fn lower<'g>(
    gp: GatedProduct<'_, 'g>,
    vals: &Values<'g>,
    (a, b, norm): (&Buffer, &Buffer, Option<(&RowNorm, &str)>),
    (p, why): (GemvParams, String),
    output: impl Fn(&Values) -> Buffer,
) -> Result<(Func, String, Option<AnchorKey>), LowerError> {
    let GatedProduct {
        g,
        gated,
        name,
        m,
        n,
        operand,
        limits,
    } = gp;
    let half = n / 2;
    // The Mul's value is what the template stores, `[m, n / 2]` in f32: its leading
    // axes are the product's rows.
    let stored = te::placeholder("y_gated", &[m, half], DType::F32);
    let mul = g.nodes[gated.mul.0].output;
    let shape = g.tensor(mul).shape.clone();
    let rank = shape.len();
    let lead: Vec<usize> = shape[..rank - 1].to_vec();
    let read = stored.clone();
    vals.set_root(
        mul,
        Box::new(move |ix: &[Expr]| {
            let row = reindex(&lead, &[m as usize], &ix[..rank - 1]);
            read.at(&[row[0].clone(), ix[rank - 1].clone()])
        }),
    );
    let out = output(vals);
    let anchor = p.template_gated(name, a, b, &stored, norm.map(|(nm, _)| nm))?;
    let mut fused = fuse(&anchor, &out)?;
    let names: Vec<String> = gated
        .nodes()
        .iter()
        .map(|n| g.nodes[n.0].name.clone())
        .collect();
    let mut what = format!(
        "{} ({why}), silu(gate) · up stored by it ({}: the product's {n} columns never stored)",
        gemv::describe(&p, operand),
        names.join(", ")
    );
    if let Some((_, words)) = norm {
        what = format!("{what}, {words}");
    }
    let per_block = p.nt * gemv::vec_of(operand) / 2;
    let blocks = (half + per_block - 1) / per_block;
    if let Some((resident, why)) = gemv_resident(limits, &p, m, blocks)? {
        match fused.func.kernel_hints.first_mut() {
            Some(h) => h.min_blocks_per_sm = resident,
            None => fused.func.kernel_hints.push(weft_ir::func::KernelHints {
                min_blocks_per_sm: resident,
                ..Default::default()
            }),
        }
        what = format!("{what}; {why}");
    }
    Ok((fused.func, what, None))
}
