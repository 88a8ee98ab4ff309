//! Fusion by cost for skinny products: a prologue chain on the activation `a` of a
//! product of few rows, priced against what that product's template streams (issue 60,
//! the decode step; issue 59, item 2).
//!
//! [`super::cost`] prices a chain by the tiled templates' reuse of each loaded element
//! (`R = macs / elements / READ_TILE`). A product of at most [`SkinnyTemplate::max_rows`]
//! rows runs on the skinny-product template instead (`weft_kernels::gemv`): it streams
//! `b` (`k × n`, the weight, read once) and keeps nothing of `a` on chip — each of its
//! `n / bn` column blocks reads all of `a`, and within a block the `nt` threads side by
//! side along a row of `b` each read (and so each compute) the same `m` elements of `a`
//! at their row. So an element of `a` is computed `C = ceil(n / bn) · nt ≈ n / vec`
//! times ([`SkinnyTemplate::computes`]), and a chain of `W` operations an element costs
//! `m · k · W · C` operations in all, against the `k · n · e` bytes of `b` (`e` bytes an
//! element) the kernel streams anyway, in a kernel whose arithmetic units wait on memory.
//! TinyLlama's decode step: `silu(gate) · up` (`W` = 6) before the down-projection
//! (`m = 1`, `k = 5632`, `n = 2048`, f16, `C` = 256) under the tiled rule (`R` = 16:
//! 96 > 64) is a kernel of its own — 2.3 µs a layer on the H200 and a store and load of
//! the chain's value — while in the skinny kernel it is 1536 operations per 4096 bytes
//! of `b` streamed for each element of `a`.
//!
//! **The rule**: a chain on the `a` (input 0) of a product the skinny template takes
//! ([`takes`]: the one rule the lowering asks too) stays in its loads while `W · C ≤ B ·`
//! [`OPS_PER_BYTE`], where `B = n · e / m` is the product's bytes of `b` per element of
//! `a` (`k · n · e` over `m · k`). Since `C ≈ n / vec` and `vec · e` is the template's
//! 16-byte load, this is about `m · W ≤ 16 · OPS_PER_BYTE = 32` — each thread computing
//! its `m` elements of the chain per 16 bytes of `b` it loads: `W ≤ 32` at one row,
//! `≤ 10` at 3, `≤ 4` at 8. `W` is [`super::cost::work`], as the tiled rule counts it. Chains
//! that are not elementwise over `a` never get here (a reduction or softmax is a group of
//! its own, never a prologue; an inlined expression holding a reduction counts past any
//! bound). Products of more rows, their `b`, and everything when the model compiler
//! gives no template keep the tiled rule. `--disable-pass skinny-prologue` ([`KEY`])
//! prices every chain by the tiled rule again (the A/B).

use weft_ir::dtype::DType;

use super::Rule;
use crate::graph::{Graph, NodeId};
use crate::op::{Anchor, Role};

/// The key that prices skinny products' prologues by the tiled templates' rule again
/// (`--disable-pass skinny-prologue`): what the rule is worth, measured.
pub const KEY: &str = "skinny-prologue";

/// Operations a skinny product may spend on its `a`'s prologue per byte of `b` it
/// streams. The H200 issues about 7 thread instructions per byte its memory delivers
/// (132 multiprocessors × 128 lanes × 1.98 GHz ≈ 33 T/s against 4.8 TB/s); the product
/// itself spends 1.25 a byte at one row of f16 (a conversion and an FMA a half, per
/// 16-byte load) to 4.6 at 8 rows. 2 leaves the product's own and a margin for the
/// transcendentals' slower unit (counted 4 each in `W`).
pub const OPS_PER_BYTE: f64 = 2.0;

/// What the model compiler says of its skinny-product template (this crate knows no
/// template).
pub struct SkinnyTemplate<'a> {
    /// The most rows it takes (`weft_kernels::gemv::MAX_M`).
    pub max_rows: usize,
    /// How many times its kernel computes each element of `a` for a product of `m` rows
    /// and `n` columns over operands of the given type: its column blocks times the
    /// threads sharing a row of `b` (each reads the element itself: a broadcast).
    pub computes: &'a dyn Fn(usize, usize, DType) -> f64,
}

/// The rows of the one matrix product the MatMul or Gemm `node` is lowered as (`a`'s
/// leading dimensions flattened into rows), or `None` where it is no product or a batched
/// one (both operands of rank past 2: a grid layer per product on the tiled templates).
pub fn product_rows(g: &Graph, node: NodeId) -> Option<usize> {
    let n = &g.nodes[node.0];
    match n.op.role() {
        Role::Anchor(Anchor::Product(_)) => {}
        Role::Anchor(Anchor::Conv(_) | Anchor::Attention(_))
        | Role::Reduction(_)
        | Role::Injective(_)
        | Role::Join { .. }
        | Role::Update(_) => return None,
    }
    let out = &g.tensor(n.output).shape;
    let b_rank = g.tensor(*n.inputs.get(1)?).shape.len();
    if out.len() > 2 && b_rank > 2 {
        return None;
    }
    Some(out[..out.len().saturating_sub(1)].iter().product())
}

/// Whether the skinny-product template computes `node`: a product of 1 to `max_rows`
/// rows ([`product_rows`]). The partition prices prologues by it, and the lowering takes
/// the template by it.
pub fn takes(g: &Graph, node: NodeId, max_rows: usize) -> bool {
    product_rows(g, node).is_some_and(|m| (1..=max_rows).contains(&m))
}

/// The type a product's template multiplies in: f16 where either operand is stored in
/// f16, else f32 (as the lowering chooses).
pub fn operand_dtype(g: &Graph, node: NodeId) -> DType {
    let n = &g.nodes[node.0];
    let f16 = n.inputs[..2.min(n.inputs.len())]
        .iter()
        .any(|&t| g.tensor(t).dtype == DType::F16);
    if f16 { DType::F16 } else { DType::F32 }
}

/// The skinny rule's terms for a chain on input `input` of `anchor`: the template's
/// computations of each element, and the bytes of `b` a computation of an element may
/// be priced against; `None` where the tiled rule applies (not a skinny product, or not
/// its `a`).
pub(super) fn priced(
    g: &Graph,
    anchor: NodeId,
    input: usize,
    t: &SkinnyTemplate,
) -> Option<(f64, Rule)> {
    if input != 0 || !takes(g, anchor, t.max_rows) {
        return None;
    }
    let rows = product_rows(g, anchor)?;
    let n = *g.tensor(g.nodes[anchor.0].output).shape.last()?;
    let dtype = operand_dtype(g, anchor);
    let computes = (t.computes)(rows, n, dtype);
    let bytes = (n * dtype.bytes()) as f64 / rows as f64;
    Some((computes, Rule::Skinny { rows, bytes }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::test_graphs::{Variant, gated_mlp};
    use crate::partition::{Shown, partition_keeping};
    use std::collections::HashSet;

    /// A gated MLP's down-projection after the gate/up product, at `rows` rows; `dearer`
    /// adds four sigmoids after the SiLU (a dearer chain).
    fn gated(rows: usize, dearer: bool) -> Graph {
        let variant = Variant {
            sigmoids: if dearer { 4 } else { 0 },
            ..Variant::default()
        };
        gated_mlp("gated", rows, variant)
    }

    /// 32 columns a block of 4 threads a row, f32: 4 lanes a thread.
    fn template() -> impl Fn(usize, usize, DType) -> f64 {
        |_, n, _| (n.div_ceil(16) * 4) as f64
    }

    fn parted(g: &Graph, skinny: bool) -> (super::super::Partition, String) {
        let computes = template();
        let t = SkinnyTemplate {
            max_rows: 8,
            computes: &computes,
        };
        let pricing = crate::partition::Pricing::all(skinny.then_some(&t));
        let p = partition_keeping(g, &HashSet::new(), pricing);
        let shown = Shown {
            graph: g,
            partition: &p,
            schedules: None,
        }
        .to_string();
        (p, shown)
    }

    #[test]
    fn the_rows_are_the_lowerings() {
        let g = gated(3, false);
        let down = g.nodes.iter().position(|n| n.name == "down").unwrap();
        assert_eq!(product_rows(&g, NodeId(down)), Some(3));
        assert!(takes(&g, NodeId(down), 8) && !takes(&g, NodeId(down), 2));
        // Not a product.
        let silu = g.nodes.iter().position(|n| n.name == "silu").unwrap();
        assert_eq!(product_rows(&g, NodeId(silu)), None);
    }

    #[test]
    fn a_gated_chain_joins_a_one_row_product_and_says_why() {
        let g = gated(1, false);
        let (p, shown) = parted(&g, true);
        // The gate/up product and the down product with the chain in its loads.
        assert_eq!(p.groups.len(), 2, "{shown}");
        assert_eq!(p.groups[1].prologue.len(), 4, "{shown}");
        let d = &p.decisions[0];
        assert!(d.inlined, "{d:?}");
        assert_eq!(
            d.rule,
            Rule::Skinny {
                rows: 1,
                bytes: 128.0
            }
        );
        // silu 5 (a sigmoid 4, a product 1), the gating product 1; the slices index only.
        assert_eq!((d.work, d.reads), (6.0, 8.0));
        assert!(
            shown.contains(
                "— 6 ops/element × computed 8× = 48 ≤ 128 B of b an element × 2 ops/B = 256 (skinny product, 1 row(s)): in the anchor's loads"
            ),
            "{shown}"
        );
        // Without the template every chain is priced as the tiled templates' are: by
        // the staged rule (a kernel of its own).
        let (p, shown) = parted(&g, false);
        assert_eq!(p.decisions[0].rule, Rule::Staged, "{shown}");
        assert!(!p.decisions[0].inlined, "{shown}");
    }

    #[test]
    fn past_the_budget_the_chain_is_a_kernel_of_its_own() {
        // 8 rows: 16 B of b an element, 6 · 8 = 48 > 32.
        let g = gated(8, false);
        let (p, shown) = parted(&g, true);
        assert_eq!(p.groups.len(), 3, "{shown}");
        assert!(!p.decisions[0].inlined, "{shown}");
        assert!(shown.contains("> 16 B of b an element"), "{shown}");
        // One row, a dearer chain: 22 ops × 8 = 176 ≤ 256 still; two rows: 176 > 128.
        let (p, shown) = parted(&gated(1, true), true);
        assert!(p.decisions[0].inlined, "{shown}");
        let (p, shown) = parted(&gated(2, true), true);
        assert!(!p.decisions[0].inlined, "{shown}");
        // Nine rows: the tiled template, the staged rule.
        let (p, shown) = parted(&gated(9, false), true);
        assert_eq!(p.decisions[0].rule, Rule::Staged, "{shown}");
    }
}
