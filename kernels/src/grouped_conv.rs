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
/// `f16`) with no tuning record, and why: the packing rule, then [`narrow_rule`] where
/// it applies, else the matmul rule over the batched product (never split: the products
/// are a grid dimension already) — what the whole-model compiler's rule chooses for the
/// same convolution.
pub fn op_rule(
    limits: &TargetLimits,
    g: &ConvGeometry,
    groups: i64,
    f16: bool,
) -> (Config, String) {
    let (p, packing) = Packing::rule(groups, g.c, g.k / groups.max(1));
    let (batch, m, n, k) = p.gemm(g);
    if f16 && let Some((config, why)) = narrow_rule(limits, batch, m, n) {
        return (config, format!("rule: {packing}; {batch} products: {why}"));
    }
    let product = rule::Product::whole(m, n, k, batch);
    let (config, _, why) = if f16 {
        matmul_f16::rule_config(limits, product, true)
    } else {
        matmul::rule_config(limits, product)
    };
    (config, format!("rule: {packing}; {batch} products: {why}"))
}

/// Rows of the narrow rule's larger tile ([`narrow_rule`]).
const NARROW_ROWS: i64 = 128;

/// The fp16 template's tiles one fragment wide (`16` columns: 4 warps stacked along
/// `m`, one 16×16 fragment wide), `rows` (64 or 128) tall, k steps of 32, on a target
/// whose matrix units are 16×16 and whose threads copy 16 bytes at once (CUDA's
/// `mma.sync`); `None` elsewhere or where it does not fit.
fn narrow_tile(limits: &TargetLimits, rows: i64) -> Option<matmul_f16::F16Params> {
    let mma = limits.f16_mma_sizes().first().copied().unwrap_or(0);
    if mma != 16 || !limits.register_cap {
        return None;
    }
    let p = matmul_f16::F16Params {
        mma,
        warps: [4, 1],
        frags: [rows / (4 * mma), 1],
        bk: 32,
        group: matmul_f16::GROUP,
        vec: 8,
        async_copy: false,
        stages: 2,
        frag_buffers: 1,
        coop_copy: false,
        warpgroups: 0,
        k_unroll: 32,
        prefetch: 1,
    };
    let fits = matmul_f16::F16Params::from_config(&p.config()).is_ok()
        && crate::within(p.threads(), limits.max_threads_per_block)
        && crate::within(p.shared_bytes(), limits.max_shared_bytes);
    fits.then_some(p)
}

/// The stated rule for a batched product of at most [`PACKED_WIDTH`] columns (every
/// product of the packing rule's narrow groups: ResNeXt's 4, 8 and 16 channels a group,
/// RegNet's 8) on a target of 16×16 matrix units copied 16 bytes a thread: a tile one
/// fragment wide, [`NARROW_ROWS`] rows where that still gives every multiprocessor two
/// blocks, else 64, where 64 rows give at least one block a multiprocessor (else
/// `None`: the matmul rule's picks). The matmul rule's tiles are at least 64 columns wide, 4× the
/// product's columns, and its cost model counts blocks, not the columns past a
/// product's edge. Measured on the H200 (2026-11-29, ninth session, `weft sweep --op
/// grouped-conv2d-f16 --fixed ...`): at ResNeXt-50's batch-8 grouped 3×3s the 128×16
/// tile took 36.8 → 21.1, 16.8 → 10.6 and 12.4 → 7.4 µs (cuDNN 16.1, 10.0, 7.4), the
/// 13 groups of RegNetY-400MF 9.3 → 6.7 (cuDNN 12.6); at batch 1, where 128 rows give
/// fewer than two blocks a multiprocessor, the 64×16 tile took stage 1 8.7 → 5.2 µs.
/// `None` where it does not apply (wider products, fp32, other targets).
pub fn narrow_rule(limits: &TargetLimits, batch: i64, m: i64, n: i64) -> Option<(Config, String)> {
    if n > PACKED_WIDTH {
        return None;
    }
    let sms = limits.multiprocessors.max(1) as i64;
    if batch * ceil_div(m, 64) < sms {
        // Fewer blocks than multiprocessors even at 64 rows: the matmul rule's shorter,
        // wider tiles give more (RegNetY-400MF at batch 1 ran 291.9 → 296.3 µs with its
        // 7² and 14² stages on 64×16 tiles, 52–55 blocks).
        return None;
    }
    let tall = batch * ceil_div(m, NARROW_ROWS);
    let rows = if tall >= 2 * sms { NARROW_ROWS } else { 64 };
    let p = narrow_tile(limits, rows)?;
    let blocks = batch * ceil_div(m, rows);
    let why = format!(
        "{n}-column products take {rows}x16 tiles, one fragment wide ({blocks} blocks over \
         {sms} multiprocessors; the matmul rule's tiles are at least 64 wide)"
    );
    Some((p.config(), why))
}

/// The configs of the fp16 (`f16`) or fp32 template that can run the batched product:
/// the template's space over views less Hopper's `wg` (which multiplies two matrices,
/// not batches), and the narrow rule's tiles ([`narrow_rule`]) where the target takes
/// them.
pub fn space(limits: &TargetLimits, f16: bool) -> Vec<Config> {
    let all = if f16 {
        matmul_f16::space_over_views(limits)
    } else {
        matmul::space(limits)
    };
    let mut out: Vec<Config> = all
        .into_iter()
        .filter(|c| c.get("wg").unwrap_or(0) == 0)
        .collect();
    if f16 {
        for rows in [64, NARROW_ROWS] {
            if let Some(p) = narrow_tile(limits, rows)
                && !out.contains(&p.config())
            {
                out.push(p.config());
            }
        }
    }
    out
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

    #[test]
    fn narrow_products_take_tiles_one_fragment_wide_on_cuda() {
        let cuda = TargetLimits::cuda();
        let tile = |batch, m, n| {
            let (config, why) = narrow_rule(&cuda, batch, m, n)?;
            let p = matmul_f16::F16Params::from_config(&config).unwrap();
            assert_eq!(p.block_n(), 16, "{why}");
            Some(p.block_m())
        };
        // ResNeXt-50's stage 1 at batch 8 (8 products of 25088 rows) and batch 1 (3136):
        // 128 rows while every multiprocessor gets two blocks, else 64.
        assert_eq!(tile(8, 25088, 16), Some(128));
        assert_eq!(tile(8, 3136, 16), Some(64));
        // Wider products keep the matmul rule; so do targets without 16-byte copies into
        // 16×16 matrix units.
        assert_eq!(tile(32, 392, 32), None);
        // Fewer blocks than multiprocessors at 64 rows (RegNetY-400MF's last two stages
        // at batch 1: 13 products of 196 rows, 55 of 49): the matmul rule's shorter tiles.
        assert!(cuda.multiprocessors > 55);
        assert_eq!(tile(13, 196, 16), None);
        assert_eq!(tile(55, 49, 8), None);
        assert_eq!(tile(16, 784, 16), Some(64));
        assert!(narrow_rule(&TargetLimits::webgpu_default(), 8, 25088, 16).is_none());
        // The op's rule takes it, and the tuner's space holds both tiles.
        let g = ConvGeometry {
            n: 8,
            c: 4,
            h: 56,
            w: 56,
            k: 128,
            r: 3,
            s: 3,
            oh: 56,
            ow: 56,
            strides: [1, 1],
            pads: [1, 1],
            dilations: None,
        };
        let (config, why) = op_rule(&cuda, &g, 32, true);
        assert_eq!(
            Some(config),
            narrow_rule(&cuda, 8, 25088, 16).map(|c| c.0),
            "{why}"
        );
        let narrow = space(&cuda, true)
            .into_iter()
            .filter(|c| c.get("wn") == Some(1))
            .count();
        assert_eq!(narrow, 2);
    }
}
