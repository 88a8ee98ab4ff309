//! The grouped convolution (`1 < groups < channels`) as an implicit GEMM per group on
//! the matmul templates' batched form, the group index a grid dimension (`blockIdx.z`):
//! group `g`'s product is `[pixels, K/G] = [pixels, C/G·R·S] · [C/G·R·S, K/G]`.
//!
//! Where the groups are narrow (ResNeXt-50's 4 and 8 output channels a group, RegNet's
//! 8) one group's product is mostly padding in a 16-wide tile (a tensor-core fragment,
//! or the fp32 template's narrowest block tile) and its reduction (`4·3·3` = 36) mostly
//! padding in a k step. So `P` groups are packed into one product of a block-diagonal
//! filter: the product `z` of packed group `z` reads the `P·C/G` channels of its `P`
//! groups (`kk → (c, r, s)`, `c` over all of them) and its filter view is zero wherever
//! an output column's group is not the input channel's:
//!
//! ```text
//! x_cols[z, i, kk] = x[n(i), z·P·Cg + c(kk), ih, iw]           (0 in the padding)
//! w_cols[z, kk, j] = w[z·P·Kg + j, c(kk) % Cg, r(kk), s(kk)]   if c(kk) / Cg == j / Kg
//!                    0                                          otherwise
//! y[n, k, oh, ow]  = y_gemm[k / (P·Kg), row(n, oh, ow), k % (P·Kg)]
//! ```
//!
//! The packed product does `P` times the multiply-adds of the groups' own, all of which
//! a 16-wide tile would have computed as padding anyway; in exchange the tile's columns
//! and k steps are filled, and there are `P` times fewer grid layers, each with a `P`
//! times longer reduction to pipeline. [`Packing::rule`] takes the fewest groups that
//! fill [`PACKED_WIDTH`] columns among the divisors of `G` (every product whole, so
//! that the output channels are exactly the products' columns and the epilogue is a
//! permutation of them); where no divisor comes near (13 groups of 8), one group a
//! product, its tile part padding.
//!
//! [`build`] makes the kernel-library op (`grouped-conv2d`, `grouped-conv2d-f16`) of the
//! same views, with [`op_rule`] and [`space`]; the whole-model compiler builds its
//! anchors from [`x_cols`] and [`w_cols`] over the graph's values.
//!
//! The views are written over [`super::conv_views`]' geometry (the window, the padding
//! predicate, the reduction order of each layout), so NCHW and NHWC read as the dense
//! implicit GEMM reads them: in NHWC the channels of the packed groups are innermost
//! and contiguous.

use weft_codegen_common::TargetLimits;
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;

use super::conv::{Layout, Variant, filter, finish, in_op_order, input, out_axes, placeholders};
use super::conv_views::{ConvGeometry, ConvLayout};
use super::product::Matmul;
use super::split_k::Anchor;
use super::{BuildError, Config, matmul, matmul_f16, rule};

/// The columns a packed product aims to fill: a tensor-core fragment's 16 (CUDA's
/// m16n16k16, WGSL's 16×16 cooperative matrices) and the fp32 template's narrowest
/// block tile (2 warps of 8×4 lanes, 4×4 a thread: 16 columns).
pub const PACKED_WIDTH: i64 = 16;

/// How a grouped convolution's groups are packed into products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packing {
    /// The convolution's groups.
    pub groups: i64,
    /// Groups one product holds.
    pub packed: i64,
    /// Input channels a group (`C/G`).
    pub cg: i64,
    /// Output channels a group (`K/G`).
    pub kg: i64,
}

impl Packing {
    /// The stated rule: the fewest groups, a divisor of `groups`, whose output channels
    /// fill [`PACKED_WIDTH`] columns, if that is at most twice as many groups as would
    /// fill them exactly (more would multiply the multiply-adds past what the padding
    /// costs); else the most groups, a divisor, that do not overfill them; with why.
    pub fn rule(groups: i64, cg: i64, kg: i64) -> (Packing, String) {
        let (groups_, kg_) = (groups.max(1), kg.max(1));
        let ideal = ceil_div(PACKED_WIDTH, kg_);
        let divides = |p: &i64| groups_ % p == 0;
        let packed = (ideal..=(2 * ideal).min(groups_))
            .find(divides)
            .or_else(|| (1..=ideal.min(groups_)).rev().find(divides))
            .unwrap_or(1);
        let p = Packing {
            groups,
            packed,
            cg,
            kg,
        };
        let why = if packed == 1 && kg >= PACKED_WIDTH {
            format!(
                "{kg} output channels a group fill a {PACKED_WIDTH}-wide tile: one group a product"
            )
        } else if packed == 1 {
            format!(
                "one group a product, {kg} columns of a {PACKED_WIDTH}-wide tile: no divisor of \
                 {groups} groups packs {ideal} to {} of them",
                2 * ideal
            )
        } else {
            format!(
                "{packed} groups a product (block-diagonal filter, {packed}x the multiply-adds) \
                 so that {} columns fill a {PACKED_WIDTH}-wide tile rather than {kg}",
                packed * kg
            )
        };
        (p, why)
    }

    /// The packed products (`G / P`): the batch, one grid layer each.
    pub fn products(&self) -> i64 {
        self.groups / self.packed
    }

    /// Input channels a product reads (`P·C/G`).
    pub fn channels(&self) -> i64 {
        self.packed * self.cg
    }

    /// Output channels a product computes (`P·K/G`).
    pub fn columns(&self) -> i64 {
        self.packed * self.kg
    }

    /// The geometry one product's views read: `g` (whose `c` is a group's input
    /// channels and `k` all output channels) with the packed groups' channels.
    pub fn geometry(&self, g: &ConvGeometry) -> ConvGeometry {
        ConvGeometry {
            c: self.channels(),
            k: self.columns(),
            ..*g
        }
    }

    /// The batched product `(batch, m, n, k)`.
    pub fn gemm(&self, g: &ConvGeometry) -> (i64, i64, i64, i64) {
        let (m, n, k) = self.geometry(g).gemm();
        (self.products(), m, n, k)
    }

    /// Where output channel `k` lies in the batched product: `[product, column]`.
    pub fn column_of(&self, k: &Expr) -> [Expr; 2] {
        let cols = self.columns();
        [k.clone() / cols, k.clone() % cols]
    }
}

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// The batched im2col view `x_cols[z, i, kk]`, `[G/P, n·oh·ow, P·Cg·r·s]`: the input
/// element GEMM row `i` of product `z` reads at reduction index `kk`, zero (of `dtype`)
/// in the padding. `g` is the
/// convolution's geometry (`c`: a group's input channels); `x` reads the input at
/// logical `[n, c, ih, iw]`, `c` over all groups.
pub fn x_cols(
    g: &ConvGeometry,
    p: &Packing,
    layout: ConvLayout,
    dtype: DType,
    x: impl FnOnce([Expr; 4]) -> Expr,
) -> Buffer {
    let pg = p.geometry(g);
    let (batch, m, _, k) = p.gemm(g);
    te::compute("x_cols", &[("z", batch), ("i", m), ("kk", k)], |i| {
        let [c, r, s] = pg.crs(layout, &i[2]);
        let [n, oh, ow] = pg.pixel(&i[1]);
        let ch = i[0].clone() * p.channels() + c;
        pg.window([n, ch, oh, ow, r, s], dtype, x)
    })
}

/// The batched block-diagonal filter view `w_cols[z, kk, j]`, `[G/P, P·Cg·r·s, P·Kg]`:
/// the tap of output column `j` at reduction index `kk` where both are of the same
/// group, zero (of `dtype`) elsewhere.
/// `w` reads the filter at logical `[k, c, r, s]` (`k` over all groups, `c` within
/// one).
pub fn w_cols(
    g: &ConvGeometry,
    p: &Packing,
    layout: ConvLayout,
    dtype: DType,
    w: impl FnOnce([Expr; 4]) -> Expr,
) -> Buffer {
    let pg = p.geometry(g);
    let (batch, _, n, k) = p.gemm(g);
    te::compute("w_cols", &[("z", batch), ("kk", k), ("j", n)], |i| {
        let [c, r, s] = pg.crs(layout, &i[1]);
        let out = i[0].clone() * p.columns() + i[2].clone();
        if p.packed == 1 {
            // One group a product: every tap is the group's own.
            return w([out, c, r, s]);
        }
        let same = (c.clone() / p.cg).eq_(i[2].clone() / p.kg);
        te::if_then_else(same, w([out, c % p.cg, r, s]), Expr::zero(dtype))
    })
}

/// The template's config for the grouped convolution `g` of `groups` groups (fp16:
/// `f16`) with no tuning record, and why: the packing rule, then the matmul rule over
/// the batched product (never split: the products are a grid dimension already) — what
/// the whole-model compiler's rule chooses for the same convolution.
pub fn op_rule(
    limits: &TargetLimits,
    g: &ConvGeometry,
    groups: i64,
    f16: bool,
) -> (Config, String) {
    let (p, packing) = Packing::rule(groups, g.c, g.k / groups.max(1));
    let (batch, m, n, k) = p.gemm(g);
    let product = rule::Product::whole(m, n, k, batch);
    let (config, _, why) = if f16 {
        matmul_f16::rule_config(limits, product, true)
    } else {
        matmul::rule_config(limits, product)
    };
    (config, format!("rule: {packing}; {batch} products: {why}"))
}

/// The configs of the fp16 (`f16`) or fp32 template that can run the batched product:
/// the template's space over views less Hopper's `wg` (which multiplies two matrices,
/// not batches).
pub fn space(limits: &TargetLimits, f16: bool) -> Vec<Config> {
    let all = if f16 {
        matmul_f16::space_over_views(limits)
    } else {
        matmul::space(limits)
    };
    all.into_iter()
        .filter(|c| c.get("wg").unwrap_or(0) == 0)
        .collect()
}

/// The grouped convolution of variant `v` (its element type and layout; `bias` adds
/// the bias and ReLU) at `g` (`g.c`: a group's input channels, `g.k`: all output
/// channels) with `groups` groups, on the matmul template of its element type with
/// `config`: one kernel, the views inlined into its loads and the output (in its
/// layout, bias and ReLU applied) into its stores. The filter is `[K, C/G, R, S]` in
/// NCHW and `[R, S, C/G, K]` in NHWC.
pub fn build(
    g: &ConvGeometry,
    groups: i64,
    v: &Variant,
    config: &Config,
) -> Result<Func, BuildError> {
    let f16 = v.dtype == DType::F16;
    let anchor = Matmul::from_config(f16, config)?;
    let all = ConvGeometry {
        c: g.c * groups,
        ..*g
    };
    let (x, _, b) = placeholders(&all, v);
    let w = match v.layout {
        Layout::Nhwc => te::placeholder("w", &[g.r, g.s, g.c, g.k], v.dtype),
        Layout::Nchw => te::placeholder("w", &[g.k, g.c, g.r, g.s], v.dtype),
    };
    let (p, _) = Packing::rule(groups, g.c, g.k / groups.max(1));
    let layout = v.layout.views();
    let cols = x_cols(g, &p, layout, v.dtype, |at| input(&x, v.layout, at));
    let weights = w_cols(g, &p, layout, v.dtype, |at| filter(&w, v.layout, at));
    let (batch, m, n, _) = p.gemm(g);
    let gemm = te::placeholder("y_gemm", &[batch, m, n], DType::F32);
    let (axes, [pn, pk, poh, pow]) = out_axes(g, v.layout);
    let y = te::compute("y", &axes, |i| {
        let row = g.row([i[pn].clone(), i[poh].clone(), i[pow].clone()]);
        let [z, col] = p.column_of(&i[pk]);
        let acc = gemm.at(&[z, row, col]);
        match (&b, v.dtype) {
            (_, DType::F16) => finish(acc, b.as_ref(), &i[pk]),
            (Some(b), _) => te::maximum(acc + b.at(&[&i[pk]]), 0.0f32),
            (None, _) => acc,
        }
    });
    let anchor = anchor.template_over(v.name, &cols, &weights, &gemm)?;
    let fused = fuse(&anchor, &y).map_err(|e| config.invalid(e.to_string()))?;
    Ok(in_op_order(fused.func))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_groups_are_packed_to_fill_a_tile() {
        // ResNeXt-50 32x4d's four stages: 4, 8, 16, 32 channels a group.
        let packed = |kg| Packing::rule(32, kg, kg).0.packed;
        assert_eq!([packed(4), packed(8), packed(16), packed(32)], [4, 2, 1, 1]);
        // RegNetY-400MF's groups of 8: 6 and 26 packed in twos; 13 and 55 have no divisor
        // from 2 to 4, one group a product.
        let packed = |g| Packing::rule(g, 8, 8);
        assert_eq!(packed(6).0.packed, 2);
        assert_eq!(packed(26).0.packed, 2);
        let (p, why) = packed(13);
        assert_eq!((p.packed, p.products()), (1, 13));
        assert!(why.contains("no divisor"), "{why}");
        assert_eq!(packed(55).0.packed, 1);
        assert!(Packing::rule(32, 4, 4).1.contains("block-diagonal"));
        // Never more groups than there are; a divisor past the ideal where it is near.
        assert_eq!(Packing::rule(2, 1, 1).0.packed, 2);
        assert_eq!(Packing::rule(64, 1, 2).0.packed, 8);
        assert_eq!(Packing::rule(3, 1, 6).0.packed, 3);
        assert_eq!(Packing::rule(9, 4, 5).0.packed, 3);
        let (p, why) = Packing::rule(3, 16, 16);
        assert_eq!((p.packed, p.products()), (1, 3));
        assert!(why.contains("one group a product"), "{why}");
    }
}
