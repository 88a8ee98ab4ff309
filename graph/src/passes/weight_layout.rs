//! Weight layouts: every weight a product reads as its B matrix is stored the way the
//! product reads it, row-major `[reduction, output]`, so that a tile of it is one
//! contiguous, coalesced load per row (16 bytes a thread on the fp16 template) rather
//! than one scalar load a column, each a reduction's length apart.
//!
//! - The filter `[K, C, R, S]` of a dense convolution (one group: the implicit GEMM)
//!   is stored `[C, R, S, K]` where the convolution reads NCHW (reduction index
//!   `(c, r, s)`) and `[R, S, C, K]` (HWIO) where it reads NHWC (reduction index
//!   `(r, s, c)`, channels innermost). So is a grouped convolution's `[K, C/G, R, S]`
//!   (not depthwise: each group, or pack of groups, an implicit GEMM over the same
//!   views), whose products' B tiles were otherwise one scalar load a column,
//!   `C/G·R·S` elements apart: ResNeXt-50's grouped 3×3s ran 10–11 µs in the model at
//!   batch 1 on the H200 against 4.4–4.7 µs for the kernel-library op over an
//!   `[R, S, C/G, K]` filter (2026-11-29, ninth session).
//! - The filter `[C·m, 1, R, S]` of a depthwise convolution reading NHWC with a window
//!   narrower than 7 (which the direct rule computes) is stored `[R, S, 1, C·m]`:
//!   consecutive threads compute consecutive channels, and each tap of the filter is
//!   then one coalesced load across them instead of one a channel `R·S` elements apart
//!   (H200, fp16: EfficientNet-B0 at batch 8 772 → 720 µs, MobileNetV2 350 → 338 µs).
//! - The `transB` operand `[N, K]` of a Gemm is stored `[K, N]`.
//! - With [`PassContext::kmajor_rows`] set (`WEFT_GEMV_KMAJOR=1`, off by default), the
//!   `B` of a product is stored **K-major**, `[N, K]` (`nn.Linear`'s layout: each output
//!   column's `k` weights contiguous, which `weft_kernels::gemv::kmajor` streams a warp a
//!   column), where **every** reader is a skinny product (at most that many rows) reading
//!   it as its `B`: a MatMul's `[K, N]` is stored transposed and a `transB` Gemm's
//!   `[N, K]` as it is. A weight a tiled product reads too keeps `[K, N]` (the tiled
//!   templates read it so). A product reading an RMS norm the partition folds into it
//!   is one like any other: the K-major template computes the fold too.
//!
//! A weight is only moved when every reader wants the same layout (a filter two
//! convolutions of different input layouts share keeps its own). Weights are constants:
//! the upload permutes them once, and no kernel transposes. Like
//! [`super::assign_precision`] this changes storage, never values, and runs after it
//! (it reads the activations' layouts that pass chose).

use std::collections::{HashMap, HashSet};

use super::PassContext;
use crate::graph::NodeId;
use crate::graph::{Graph, TensorId};
use crate::op::Op;
use crate::partition::skinny;
use crate::tensor::Layout;

/// The narrowest depthwise window the depthwise template may take over views (the model
/// compiler reads it here, so that its lowering and this layout agree); narrower ones
/// always run by the direct rule, whose loads want the filter channels innermost. The
/// template's shared-tile configs want `[C, R, S]` (they stage a channel's taps
/// together), and so, measured, do the direct rule's 7×7s (see `depthwise` in
/// [`assign_weight_layouts`]). On targets whose compiler
/// takes a register cap (CUDA) the template's NHWC rule keeps each thread's window and
/// taps in registers instead (`weft_kernels::depthwise::rule_config`), its 32 threads
/// on 32 consecutive channels: they want channels innermost as the direct rule does —
/// `[C, R, S]` there made each of a thread's 49 tap loads touch 32 sectors, and the
/// batch-8 56² × 96 layer ran 38.0 µs in the model against 21.4 µs for the op over an
/// `[R, S, 1, C]` filter (2026-11-30, tenth session).
pub const DEPTHWISE_TEMPLATE_WINDOW: usize = 7;

/// The fewest outputs (pixels over the batch, times channels) at which a depthwise
/// convolution over views takes the depthwise template rather than the direct rule (see
/// [`depthwise_template_pays`]).
pub const DEPTHWISE_TEMPLATE_MIN_OUTPUTS: i64 = 28 * 28 * 192;

/// Whether a depthwise convolution over views (f16, NHWC, an inlined prologue) of `n`
/// images of `c` channels and `hw` pixels, a `k × k` window at `stride`, takes the
/// depthwise template rather than the direct rule: at least
/// [`DEPTHWISE_TEMPLATE_MIN_OUTPUTS`] outputs, and a window of at least
/// [`DEPTHWISE_TEMPLATE_WINDOW`] — or, where the target's compiler takes a register cap
/// (`register_cap`: CUDA, whose template keeps each thread's window in registers), a
/// batch of several images at stride 1 (see [`small_windows_take_the_template`]).
/// Measured on the H200 (fp16 NHWC, batch 1, 2026-11-29, measurements/h200-2026-11-29d):
/// every 3×3 and 5×5 layer of MobileNetV2 and EfficientNet-B0 ran faster by the direct
/// rule (MobileNetV2's 17: 52 µs direct, 91 µs template; EfficientNet-B0's 16: 69
/// against 106), its one thread an output reading nine or 25 taps through L1;
/// ConvNeXt-tiny's 7×7s ran faster on the template at 56² × 96 and 28² × 192 (11.4
/// against 20.6 µs, 10.4 against 12.6: 301k and 151k outputs), where its input window
/// is read once for several outputs, and alike at 14² × 384 and 7² × 768 (9.2 against
/// 9.0, 7.8 against 7.0: 75k and 38k outputs). At batch 8 the direct rule ran the 14² ×
/// 384 layers in 33.4 µs each (2026-11-29, eighth session; 602k outputs) and the 7² ×
/// 768 ones in 17.8 µs (2026-11-30, tenth session, `measurements/h200-2026-11-30`;
/// 301k outputs), where the template runs the latter in 7.0 µs: the outputs decide, not
/// the pixels.
pub fn depthwise_template_pays(
    n: i64,
    c: i64,
    hw: [i64; 2],
    k: i64,
    stride: i64,
    register_cap: bool,
) -> bool {
    let s = stride.max(1);
    let (oh, ow) = ((hw[0] + s - 1) / s, (hw[1] + s - 1) / s);
    let window = k >= DEPTHWISE_TEMPLATE_WINDOW as i64
        || (register_cap && small_windows_take_the_template(n, stride));
    window && n * oh * ow * c >= DEPTHWISE_TEMPLATE_MIN_OUTPUTS
}

/// Whether a depthwise convolution narrower than [`DEPTHWISE_TEMPLATE_WINDOW`] (3×3,
/// 5×5) takes the template's register windows on CUDA (where it has enough outputs):
/// over several images at stride 1. Measured on the H200 at batch 8 (fp16 NHWC,
/// 2026-11-30, fifteenth session, `measurements/h200-2026-11-30f` call 3), direct rule →
/// template: EfficientNet-B0's 16 depthwise layers 170.6 → 135.1 µs in all, MobileNetV2's
/// 17 116.6 → 91.4, the stride-1 layers faster everywhere (`[8, 144, 56, 56]` 19.3 →
/// 12.1 and 17.2 → 9.7, `[8, 1152, 7, 7]` 8.0 → 5.3, ShuffleNetV2's `[8, 116, 14, 14]`
/// 3.5 → 3.2) and the stride-2 ones slower (`[8, 144, 28, 28]` 12.6 → 19.5 and 6.0 →
/// 8.7, ShuffleNetV2's 3.4 → 5.1); at batch 1 the direct rule was the faster at every
/// layer (above), so one image keeps it.
pub fn small_windows_take_the_template(n: i64, stride: i64) -> bool {
    n >= 2 && stride == 1
}

/// Stores the B operands of dense convolutions and `transB` Gemms row-major by the rules
/// of the module. Returns how many weights changed layout.
pub fn assign_weight_layouts(g: &mut Graph, cx: &PassContext) -> usize {
    let kmajor = kmajor_weights(g, cx);
    // The layout each reader wants for each weight; `None` once any reader wants
    // something else (or reads it in another role).
    let mut wanted: HashMap<TensorId, Option<Layout>> = HashMap::new();
    for n in &g.nodes {
        for (slot, &t) in n.inputs.iter().enumerate() {
            if kmajor.contains(&t) {
                // Every reader is a skinny product reading it as `B` (so `slot` is 1).
                let want = if let Op::Gemm(p) = &n.op
                    && p.trans_b
                {
                    Layout::RowMajor
                } else {
                    Layout::Transposed
                };
                wanted
                    .entry(t)
                    .and_modify(|w| {
                        if *w != Some(want) {
                            *w = None;
                        }
                    })
                    .or_insert(Some(want));
                continue;
            }
            // A dense convolution's filter and a `transB` Gemm's B operand; every other
            // input of every other op is read as it is stored.
            let depthwise = |c: &crate::op::Conv| {
                let (xs, ws) = (&g.tensor(n.inputs[0]).shape, &g.tensor(t).shape);
                let channels_innermost = || {
                    let d = |i: usize| xs[i] as i64;
                    let template = depthwise_template_pays(
                        d(0),
                        d(1),
                        [d(2), d(3)],
                        ws[2] as i64,
                        c.strides[0] as i64,
                        cx.limits.register_cap,
                    );
                    // The template's register windows on CUDA. The direct rule at these
                    // windows keeps `[C, R, S]`: with `[R, S, 1, C]` ConvNeXt-tiny's
                    // twelve direct 7×7s at batch 1 (14² and 7²) made the model 449 →
                    // 552 µs (eighth session) and 434 → 542 µs (tenth), whatever the
                    // template's config beside them.
                    template && cx.limits.register_cap
                };
                c.groups > 1
                    && xs.len() == 4
                    && ws.len() == 4
                    && c.groups == xs[1]
                    && ws[1] == 1
                    && (ws[2] < DEPTHWISE_TEMPLATE_WINDOW || channels_innermost())
                    && g.tensor(n.inputs[0]).layout == Layout::ChannelsLast
            };
            // One input and one output channel a group: the depthwise template's or the
            // direct rule's, never an implicit GEMM's.
            let plain_depthwise = |c: &crate::op::Conv| {
                let (xs, ws) = (&g.tensor(n.inputs[0]).shape, &g.tensor(t).shape);
                xs.len() == 4 && ws.len() == 4 && c.groups == xs[1] && ws[0] == xs[1]
            };
            let want = if let Op::Conv(c) = &n.op
                && slot == 1
                && depthwise(c)
            {
                // A depthwise filter `[C·m, 1, R, S]` read beside an NHWC input by the
                // direct rule (or, on CUDA, the template's register windows): channels
                // innermost (`[R, S, 1, C·m]`), so that the threads of consecutive
                // channels read consecutive taps of the filter, as they read the input.
                Some(Layout::FilterRsck)
            } else if let Op::Conv(c) = &n.op
                && slot == 1
                && g.tensor(t).shape.len() == 4
                && (c.groups == 1 || !plain_depthwise(c))
            {
                // A dense convolution's filter, or a grouped one's (each group an implicit
                // GEMM whose B rows are the group's `(c, r, s)` and whose columns are
                // output channels): output channels innermost.
                let channels_last = g.tensor(n.inputs[0]).layout == Layout::ChannelsLast;
                Some(if channels_last {
                    Layout::FilterRsck
                } else {
                    Layout::FilterCrsk
                })
            } else if let Op::Gemm(p) = &n.op
                && slot == 1
                && p.trans_b
                && g.tensor(t).shape.len() == 2
            {
                Some(Layout::Transposed)
            } else {
                None
            };
            wanted
                .entry(t)
                .and_modify(|w| {
                    if *w != want {
                        *w = None;
                    }
                })
                .or_insert(want);
        }
    }
    // A graph output is read by the user in logical order: keep it.
    for o in &g.outputs {
        wanted.insert(*o, None);
    }
    let mut changed = 0;
    for (t, layout) in wanted {
        let tensor = &mut g.tensors[t.0];
        if let Some(layout) = layout
            && tensor.is_constant()
            && tensor.layout != layout
        {
            tensor.layout = layout;
            changed += 1;
        }
    }
    changed
}

/// The weights to store K-major: none unless [`PassContext::kmajor_rows`] is set; then
/// each two-dimensional `B` whose every reader is a product of at most that many rows
/// (`skinny::takes`) reading it as `B` alone, `a` not transposed.
fn kmajor_weights(g: &Graph, cx: &PassContext) -> HashSet<TensorId> {
    let Some(rows) = cx.kmajor_rows else {
        return HashSet::new();
    };
    let mut all_skinny: HashMap<TensorId, bool> = HashMap::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let product = matches!(n.op, Op::MatMul) || matches!(&n.op, Op::Gemm(p) if !p.trans_a);
        for (slot, &t) in n.inputs.iter().enumerate() {
            let takes = product
                && slot == 1
                && n.inputs[0] != t
                && n.inputs.get(2) != Some(&t)
                && g.tensor(t).shape.len() == 2
                && skinny::takes(g, NodeId(i), rows);
            *all_skinny.entry(t).or_insert(true) &= takes;
        }
    }
    all_skinny
        .into_iter()
        .filter(|&(t, all)| all && g.tensor(t).is_constant() && !g.outputs.contains(&t))
        .map(|(t, _)| t)
        .collect()
}

#[cfg(test)]
mod tests {
    use ndarray::{ArrayD, IxDyn};
    use weft_ir::dtype::DType;

    use super::*;
    use crate::builder::GraphBuilder;
    use crate::op::{Conv, Gemm};
    use crate::passes::testing::max_difference;
    use crate::passes::{Precision, assign_precision};
    use weft_codegen_common::TargetLimits;

    /// A dense convolution, a depthwise one, a shared filter, and a transB Gemm.
    fn net() -> Graph {
        let mut b = GraphBuilder::new("w");
        let x = b.input("x", &[1, 4, 6, 6], DType::F32);
        let ramp = |shape: &[usize]| {
            let n: usize = shape.iter().product();
            ArrayD::from_shape_vec(
                IxDyn(shape),
                (0..n).map(|i| (i % 7) as f32 * 0.1 - 0.3).collect(),
            )
            .unwrap()
        };
        let w = b.weight("w", ramp(&[4, 4, 3, 3]));
        let y = b.conv("conv", x, w, None, Conv::new(1, 1)).unwrap();
        let y = b.conv("again", y, w, None, Conv::new(1, 1)).unwrap();
        let wd = b.weight("wd", ramp(&[4, 1, 3, 3]));
        let z = b
            .conv("dw", y, wd, None, Conv::new(1, 1).grouped(4))
            .unwrap();
        let f = b.flatten("flat", z, 1).unwrap();
        let wf = b.weight("fc", ramp(&[5, 144]));
        let gemm = Gemm {
            alpha: 1.0,
            beta: 0.0,
            trans_a: false,
            trans_b: true,
        };
        let out = b.node("gemm", Op::Gemm(gemm), &[f, wf]).unwrap();
        b.output(out);
        b.finish().unwrap()
    }

    fn layout(g: &Graph, name: &str) -> Layout {
        g.tensors.iter().find(|t| t.name == name).unwrap().layout
    }

    #[test]
    fn b_operands_are_stored_row_major_for_the_product() {
        let g0 = net();
        let mut g = g0.clone();
        assert_eq!(assign_weight_layouts(&mut g, &PassContext::default()), 2);
        assert_eq!(layout(&g, "w"), Layout::FilterCrsk);
        assert_eq!(layout(&g, "fc"), Layout::Transposed);
        // A depthwise filter read NCHW (the depthwise template's own buffers): left alone.
        assert_eq!(layout(&g, "wd"), Layout::RowMajor);
        // Storage only.
        assert_eq!(max_difference(&g0, &g), 0.0);
        assert_eq!(assign_weight_layouts(&mut g, &PassContext::default()), 0);
    }

    #[test]
    fn channels_last_convolutions_take_hwio() {
        let mut g = net();
        assign_precision(
            &mut g,
            &PassContext::default().with_precision(Precision::F16),
        );
        assign_weight_layouts(&mut g, &PassContext::default());
        // `conv` reads the f32 NCHW graph input, `again` an NHWC activation: the shared
        // filter is wanted two ways and keeps the layout precision gave it.
        assert_eq!(layout(&g, "w"), Layout::ChannelsLast);
        let mut b = GraphBuilder::new("one");
        let x = b.input("x", &[1, 4, 6, 6], DType::F32);
        let y = b.relu("relu", x).unwrap();
        let w = b.weight("w", ArrayD::from_elem(IxDyn(&[4, 4, 1, 1]), 0.5));
        let y = b.conv("conv", y, w, None, Conv::new(1, 0)).unwrap();
        b.output(y);
        let mut g = b.finish().unwrap();
        assign_precision(
            &mut g,
            &PassContext::default().with_precision(Precision::F16),
        );
        assert_eq!(assign_weight_layouts(&mut g, &PassContext::default()), 1);
        assert_eq!(layout(&g, "w"), Layout::FilterRsck);
    }

    /// A grouped convolution of 4 groups of 2 → 3 channels over a computed input.
    fn grouped() -> Graph {
        let mut b = GraphBuilder::new("grouped");
        let x = b.input("x", &[1, 8, 5, 7], DType::F32);
        let y = b.relu("relu", x).unwrap();
        let n = 12 * 2 * 3 * 3;
        let w = ArrayD::from_shape_vec(
            IxDyn(&[12, 2, 3, 3]),
            (0..n).map(|i| (i % 11) as f32 * 0.05 - 0.2).collect(),
        )
        .unwrap();
        let w = b.weight("wg", w);
        let y = b.conv("g", y, w, None, Conv::new(1, 1).grouped(4)).unwrap();
        b.output(y);
        b.finish().unwrap()
    }

    #[test]
    fn grouped_filters_are_stored_as_their_products_read_them() {
        // NCHW (f32): `[C/G, R, S, K]`, the reduction `(c, r, s)` outermost.
        let g0 = grouped();
        let mut g = g0.clone();
        assert_eq!(assign_weight_layouts(&mut g, &PassContext::default()), 1);
        assert_eq!(layout(&g, "wg"), Layout::FilterCrsk);
        assert_eq!(max_difference(&g0, &g), 0.0);
        // NHWC (f16): `[R, S, C/G, K]`, output channels innermost as the columns of the
        // packed products' B tiles.
        let mut g = g0.clone();
        let ctx = PassContext::default().with_precision(Precision::F16);
        assign_precision(&mut g, &ctx);
        assign_weight_layouts(&mut g, &ctx);
        assert_eq!(layout(&g, "relu"), Layout::ChannelsLast);
        assert_eq!(layout(&g, "wg"), Layout::FilterRsck);
    }

    #[test]
    fn depthwise_filters_beside_nhwc_take_channels_last() {
        // In f16 the activations are NHWC: the depthwise filter `wd` takes `[R, S, 1, C]`.
        let g0 = net();
        let mut g = g0.clone();
        let ctx = PassContext::default().with_precision(Precision::F16);
        assign_precision(&mut g, &ctx);
        assign_weight_layouts(&mut g, &ctx);
        assert_eq!(layout(&g, "wd"), Layout::FilterRsck);
        // A 7×7 window: where the depthwise template takes it (28² × 192 outputs and
        // more), on CUDA (its NHWC rule's register windows) `[R, S, 1, C]` too, elsewhere
        // (its shared tiles) `[C, R, S]`; below, the direct rule's 7×7s keep `[C, R, S]`.
        let wide = |c: usize, hw: usize| {
            let mut b = GraphBuilder::new("wide");
            let x = b.input("x", &[1, c, hw, hw], DType::F32);
            let y = b.relu("relu", x).unwrap();
            let w7 = b.weight("w7", ArrayD::from_elem(IxDyn(&[c, 1, 7, 7]), 0.1));
            let y = b
                .conv("dw7", y, w7, None, Conv::new(1, 3).grouped(c))
                .unwrap();
            b.output(y);
            b.finish().unwrap()
        };
        for (c, hw, limits, want) in [
            (192, 28, TargetLimits::cuda(), true),
            (192, 28, TargetLimits::metal(), false),
            (192, 28, TargetLimits::webgpu_default(), false),
            (4, 9, TargetLimits::cuda(), false),
            (384, 14, TargetLimits::cuda(), false),
        ] {
            let ctx = PassContext::new(limits).with_precision(Precision::F16);
            let wide0 = wide(c, hw);
            let mut wide = wide0.clone();
            assign_precision(&mut wide, &ctx);
            assign_weight_layouts(&mut wide, &ctx);
            assert_eq!(layout(&wide, "relu"), Layout::ChannelsLast);
            assert_eq!(
                layout(&wide, "w7") == Layout::FilterRsck,
                want,
                "{c}×{hw}² on {}",
                ctx.limits.name
            );
            assert_eq!(max_difference(&wide0, &wide), 0.0);
        }
        // In f32 (NCHW) it stays as it is: the template over its own buffers reads it so.
        let mut g = g0.clone();
        assign_weight_layouts(&mut g, &PassContext::default());
        assert_eq!(layout(&g, "wd"), Layout::RowMajor);
    }

    /// `x [rows, 16] · w [16, 5]` and `x · wt [5, 16]ᵀ` (a `transB` Gemm), and where
    /// `shared` a product of 32 rows reading `w` too.
    fn skinny(rows: usize, shared: bool) -> Graph {
        let mut b = GraphBuilder::new("skinny");
        let x = b.input("x", &[rows, 16], DType::F32);
        let w = b.weight("w", ArrayD::from_elem(IxDyn(&[16, 5]), 0.1));
        let wt = b.weight("wt", ArrayD::from_elem(IxDyn(&[5, 16]), 0.2));
        let y = b.node("mm", Op::MatMul, &[x, w]).unwrap();
        let gemm = Gemm {
            alpha: 1.0,
            beta: 0.0,
            trans_a: false,
            trans_b: true,
        };
        let z = b.node("gemm", Op::Gemm(gemm), &[x, wt]).unwrap();
        b.output(y);
        b.output(z);
        if shared {
            let big = b.input("big", &[32, 16], DType::F32);
            let t = b.node("tiled", Op::MatMul, &[big, w]).unwrap();
            b.output(t);
        }
        b.finish().unwrap()
    }

    #[test]
    fn skinny_products_weights_are_k_major_with_the_switch_alone() {
        let on = PassContext::default().with_kmajor_rows(Some(8));
        // Off (the default): `w` as it is, the transB Gemm's `[N, K]` transposed.
        let mut g = skinny(1, false);
        assign_weight_layouts(&mut g, &PassContext::default());
        assert_eq!(layout(&g, "w"), Layout::RowMajor);
        assert_eq!(layout(&g, "wt"), Layout::Transposed);
        // On, at 1 and 8 rows: both `[N, K]`.
        for rows in [1, 8] {
            let g0 = skinny(rows, false);
            let mut g = g0.clone();
            assert_eq!(assign_weight_layouts(&mut g, &on), 1);
            assert_eq!(layout(&g, "w"), Layout::Transposed);
            assert_eq!(layout(&g, "wt"), Layout::RowMajor);
            assert_eq!(max_difference(&g0, &g), 0.0);
        }
        // Past the rows, the tiled templates' `[K, N]`.
        let mut g = skinny(9, false);
        assign_weight_layouts(&mut g, &on);
        assert_eq!(layout(&g, "w"), Layout::RowMajor);
        assert_eq!(layout(&g, "wt"), Layout::Transposed);
        // A weight a tiled product reads too keeps `[K, N]`.
        let mut g = skinny(1, true);
        assign_weight_layouts(&mut g, &on);
        assert_eq!(layout(&g, "w"), Layout::RowMajor);
        assert_eq!(layout(&g, "wt"), Layout::RowMajor);
    }

    #[test]
    fn a_product_reading_an_rms_norm_is_k_major_too() {
        let mut b = GraphBuilder::new("normed");
        let x = b.input("x", &[1, 16], DType::F32);
        let gamma = b.weight("gamma", ArrayD::from_elem(IxDyn(&[16]), 1.5));
        let w = b.weight("w", ArrayD::from_elem(IxDyn(&[16, 5]), 0.1));
        let norm = Op::LayerNorm(crate::op::LayerNorm {
            axis: 1,
            epsilon: 1e-5,
            rms: true,
        });
        let y = b.node("norm", norm, &[x, gamma]).unwrap();
        let p = b.node("proj", Op::MatMul, &[y, w]).unwrap();
        b.output(p);
        let g0 = b.finish().unwrap();
        let on = PassContext::default().with_kmajor_rows(Some(8));
        let mut g = g0.clone();
        assign_weight_layouts(&mut g, &on);
        assert_eq!(layout(&g, "w"), Layout::Transposed);
        // The norm's scale is no product's `B`.
        assert_eq!(layout(&g, "gamma"), Layout::RowMajor);
    }
}
