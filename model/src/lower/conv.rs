//! Convolution anchors, any geometry: the implicit GEMM on the matmul template (dense
//! convolutions; the fp16 matmul template where the convolution reads or writes f16),
//! its batched form for grouped ones, a product per group or per pack of narrow groups
//! ([`super::conv_grouped`]), the depthwise template (depthwise, "same" padding, square
//! odd window: over buffers of its own where its input is stored f32 NCHW, otherwise
//! over the group's views — f16 loads widened to f32 sums, NHWC walked channels
//! fastest, an inlined prologue), and the direct convolution under the reduction rule
//! (every other depthwise one: dilated, asymmetric), its sum in an f32 register. Each
//! takes the group's prologues into its loads and its epilogue chain (bias, residual,
//! activation) into its stores.
//!
//! The implicit GEMM's im2col and filter views and the window the direct convolution
//! reads are the kernel library's ([`weft_kernels::conv_views`], as the benchmark
//! workloads build theirs), read here through the group's values; this module chooses
//! the variant and the config and wires the operands, the copies and the epilogue.

use weft_graph::op::Conv;
use weft_graph::partition::Group;
use weft_graph::{Graph, Layout, TensorId};
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_kernels::conv_views::{self, ConvGeometry, ConvLayout};
use weft_kernels::winograd::{self, WinogradDims};
use weft_kernels::{depthwise, matmul, matmul_f16};

use super::Chooser;
use super::values::{Values, in_logical_order, in_memory_order};
use super::{choose, conv_grouped, narrow, rules};
use crate::anchor::{AnchorKey, AnchorTemplate, ConvInput, ConvViews, Views};
use crate::error::{LowerError, ModelError};
use weft_graph::passes::memory_order;
use weft_kernels::product::Matmul;
use weft_kernels::split_k::{Anchor, Split, join};

/// A convolution's sizes, read off its tensors.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    /// As the implicit GEMM's views and the window read it (`view.c`: the input
    /// channels per group).
    view: ConvGeometry,
    /// The input's channels, all groups.
    c: i64,
    conv: Conv,
}

/// Which way a convolution is scheduled: the stated rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConvVariant {
    ImplicitGemm,
    /// `1 < groups`, not depthwise: the batched implicit GEMM of [`super::conv_grouped`].
    Grouped,
    Depthwise,
    Direct,
}

/// A depthwise convolution ("same" padding, a square odd window, one stride) takes the
/// depthwise template whatever its element types and layouts: over buffers of its own
/// where its input and filter are stored f32 NCHW and its input is no fused prologue,
/// otherwise over the group's views of them (f16 loads widened to f32 sums; NHWC walked
/// channels fastest).
fn choose(d: &Geometry) -> ConvVariant {
    let (c, v) = (d.conv, d.view);
    if c.groups == 1 {
        return ConvVariant::ImplicitGemm;
    }
    // Grouped (a group of more than one input channel, or a depthwise convolution with a
    // channel multiplier): an implicit GEMM per group. A depthwise convolution (one
    // input and one output channel a group) stays with the depthwise template or the
    // direct rule.
    if c.groups as i64 != d.c || v.k != d.c {
        return ConvVariant::Grouped;
    }
    let same_pad = (v.r - 1) / 2;
    let depthwise = c.groups as i64 == d.c
        && v.k == d.c
        && v.r == v.s
        && v.r % 2 == 1
        && c.dilations == [1, 1]
        && c.strides[0] == c.strides[1]
        && c.pads.iter().all(|&p| p as i64 == same_pad);
    if depthwise {
        ConvVariant::Depthwise
    } else {
        ConvVariant::Direct
    }
}

/// Whether a depthwise convolution over views takes the template: the rule and its
/// measurements are [`weft_graph::passes::depthwise_template_pays`]'s, which the weight
/// layout pass reads too (the filter's layout follows the schedule).
fn views_template_pays(d: &Geometry, limits: &weft_codegen_common::TargetLimits) -> bool {
    weft_graph::passes::depthwise_template_pays(
        d.view.n,
        d.c,
        [d.view.h, d.view.w],
        d.view.r,
        d.conv.strides[0] as i64,
        limits.register_cap,
    )
}

/// The environment variable that reads every 1×1 convolution through the implicit
/// GEMM's views (`0`) instead of as the stored product it is (unset or `1`): a knob for
/// timing the two on whole models; other values are refused.
pub const POINTWISE_ENV: &str = "WEFT_CONV1X1";

/// Whether convolution `node` (`d`) is a product over stored operands: 1×1, stride 1, no
/// padding, one group, its input stored NHWC f16 from its buffer's start (not computed
/// at the loads, not a strided slice of a Concat, not read again by the epilogue), its
/// filter stored `[R, S, C, K]` f16. Then the input's memory is the `[N·H·W, C]` matrix
/// and the filter's the `[C, K]` one, read as they are.
fn pointwise_stored(
    g: &Graph,
    group: &Group,
    vals: &Values,
    node: &weft_graph::Node,
    d: &Geometry,
) -> bool {
    let (x, w) = (node.inputs[0], node.inputs[1]);
    let (c, v) = (d.conv, d.view);
    let (tx, tw) = (g.tensor(x), g.tensor(w));
    let geometry = c.groups == 1
        && v.r == 1
        && v.s == 1
        && c.strides == [1, 1]
        && c.pads.iter().all(|&p| p == 0)
        && v.c == d.c;
    let stored = tx.dtype == DType::F16
        && tx.layout == Layout::ChannelsLast
        && tw.dtype == DType::F16
        && tw.layout == Layout::FilterRsck
        && !vals.computes(x)
        && vals.leads(x);
    // A tensor is registered under one buffer a kernel: the input read again by the
    // epilogue (or already given a buffer) stays with the views.
    let read_after = group
        .epilogue
        .iter()
        .any(|e| g.nodes[e.0].inputs.contains(&x));
    let registered = vals.buffers().iter().any(|(t, _)| *t == x || *t == w);

    geometry && stored && !read_after && !registered
}

/// Lowers the convolution group `group` (its root a Conv with attributes `c`).
pub(crate) fn lower<'g>(
    g: &'g Graph,
    group: &Group,
    c: &Conv,
    vals: &Values<'g>,
    name: &str,
    chooser: &Chooser,
    output: impl Fn(&Values) -> Buffer,
) -> Result<(Func, String, Option<AnchorKey>), ModelError> {
    let limits = chooser.limits;
    let node = &g.nodes[group.root.0];
    let fail = |source: LowerError| ModelError::Lower {
        node: node.name.clone(),
        op: "Conv",
        source: Box::new(source),
    };
    let (x, w) = (node.inputs[0], node.inputs[1]);
    let bias = node.inputs.get(2).copied();
    let (xs, ws, ys) = (
        &g.tensor(x).shape,
        &g.tensor(w).shape,
        &g.tensor(node.output).shape,
    );
    let i = |v: usize| v as i64;
    let pair = |v: &[usize]| [i(v[0]), i(v[1])];
    let view = ConvGeometry {
        n: i(xs[0]),
        c: i(ws[1]),
        h: i(xs[2]),
        w: i(xs[3]),
        k: i(ws[0]),
        r: i(ws[2]),
        s: i(ws[3]),
        oh: i(ys[2]),
        ow: i(ys[3]),
        strides: pair(&c.strides),
        // ONNX's pads: the beginnings of both axes, then their ends.
        pads: pair(&c.pads),
        dilations: Some(pair(&c.dilations)),
    };
    let d = Geometry {
        view,
        c: i(xs[1]),
        conv: *c,
    };
    let x_inline = group.prologue.iter().any(|&p| g.nodes[p.0].output == x);
    let f32_nchw = |t: TensorId| {
        let t = g.tensor(t);
        (t.dtype, t.layout) == (DType::F32, Layout::RowMajor)
    };
    let bias_stored = bias.map(|b| vals.stored(b));
    let with_bias = move |v: Expr, k: &Expr| match &bias_stored {
        Some(b) => v + b.at(std::slice::from_ref(k)),
        None => v,
    };
    // The depthwise template over buffers of its own reads them f32 NCHW, from their
    // buffers' starts (not a strided slice of a Concat).
    let own_buffers = !x_inline && f32_nchw(x) && f32_nchw(w) && vals.leads(x);
    let chosen = match choose(&d) {
        // Over views the template pays only for wide windows on large images; elsewhere
        // the direct rule is faster ([`VIEWS_TEMPLATE_MIN_WINDOW`]).
        ConvVariant::Depthwise if !own_buffers && !views_template_pays(&d, limits) => {
            ConvVariant::Direct
        }
        v => v,
    };
    match chosen {
        ConvVariant::ImplicitGemm => {
            // fp16 where the convolution reads or writes f16: the fp16 matmul template
            // (matrix units where the target has them) over f16 views, f32 sums.
            let f16 = g.tensor(x).dtype == DType::F16 || g.tensor(node.output).dtype == DType::F16;
            let operand = if f16 { DType::F16 } else { DType::F32 };
            // A narrow NCHW input in fp16 (a stem reading the image) is first copied into
            // a padded NHWC f16 buffer by a kernel of its own (`narrow`), which the
            // product then reads as an input of `PADDED_CHANNELS` channels.
            let real_c = d.c;
            let narrow = f16
                && c.groups == 1
                && g.tensor(x).layout == Layout::RowMajor
                && d.c < narrow::PADDED_CHANNELS;
            let copied = if narrow {
                let v = d.view;
                Some(narrow::copy(vals, x, [v.n, d.c, v.h, v.w], name).map_err(fail)?)
            } else {
                None
            };
            let d = if narrow {
                let pc = narrow::PADDED_CHANNELS;
                let view = ConvGeometry { c: pc, ..d.view };
                Geometry { view, c: pc, ..d }
            } else {
                d
            };
            let v = d.view;
            let (gm, gn, gk) = v.gemm();
            // The reduction index kk as (c, r, s): channels innermost where the input
            // is channels last, so that consecutive kk walk one pixel's channels.
            let nhwc = g.tensor(x).layout == Layout::ChannelsLast || narrow;
            let layout = if nhwc {
                ConvLayout::Nhwc
            } else {
                ConvLayout::Nchw
            };
            // A 1×1 convolution of stride 1 without padding over a stored NHWC f16 input
            // is a plain product: its input's memory is the `[N·H·W, C]` matrix and its
            // filter's (`[R, S, C, K]`) the `[C, K]` one. Read as the template's own
            // placeholders, the template's whole space applies — Hopper's TMA + wgmma
            // tiles at any tile count, which over gathered views it keeps to products
            // of many tiles (`matmul_f16::WGMMA_VIEWS_MIN_TILES`).
            let pointwise = choose::switch(
                POINTWISE_ENV,
                "1×1 convolutions read as stored products",
                "through the implicit GEMM's views",
            )
            .map_err(fail)?
                && pointwise_stored(g, group, vals, node, &d)
                && !narrow;
            let cols = if pointwise {
                let a = te::placeholder(&vals.fresh_name(&g.tensor(x).name), &[gm, gk], DType::F16);
                vals.adopt(x, &a);
                a
            } else {
                conv_views::x_cols(&v, layout, operand, |at| match &copied {
                    Some((_, padded)) => {
                        let [n, ch, ih, iw] = at;
                        padded.at(&[n, ih, iw, ch])
                    }
                    None => vals.at_as(x, &at, operand),
                })
            };
            let view_weights = || {
                conv_views::w_cols(&v, layout, |[k, ch, r, s]| {
                    if narrow {
                        // Zero taps for the padded channels.
                        let real = ch.clone().lt(real_c);
                        let at = [k, ch.min(real_c - 1), r, s];
                        te::if_then_else(real, vals.at_as(w, &at, operand), Expr::zero(operand))
                    } else {
                        vals.at_as(w, &[k, ch, r, s], operand)
                    }
                })
            };
            // The rule picks the template's tile and how many parts the reduction is split
            // into.
            let key = AnchorKey {
                template: if f16 {
                    AnchorTemplate::MatmulF16
                } else {
                    AnchorTemplate::Matmul
                },
                m: gm,
                n: gn,
                k: gk,
                batch: 1,
                views: if pointwise {
                    Views::Stored
                } else {
                    Views::Conv(ConvViews {
                        x: [v.n, d.c, v.h, v.w],
                        w: [v.k, v.c, v.r, v.s],
                        strides: c.strides,
                        pads: c.pads,
                        dilations: c.dilations,
                        input: if narrow {
                            ConvInput::Nhwc4Copy
                        } else if nhwc {
                            ConvInput::Nhwc
                        } else {
                            ConvInput::Nchw
                        },
                    })
                },
                winograd: winograd_dims(&d, f16).map(|w| [w.k, w.p4(), w.c]),
            };
            let (choice, why) = choose::anchor_with(
                limits,
                chooser.choices,
                &key,
                vals.computes(x),
                chooser.beside,
            );
            if choice.winograd
                && let Some(wd) = winograd_dims(&d, f16)
            {
                let operands = [x, w, node.output];
                let func = winograd(
                    vals,
                    operands,
                    &wd,
                    &choice.config,
                    with_bias,
                    &output,
                    name,
                )
                .map_err(fail)?;
                let what = matmul::describe(&choice.config).unwrap_or_else(|e| e);
                return Ok((
                    func,
                    format!(
                        "Winograd F(2x2, 3x3), its 16 products on the matmul template: {what} ({why})"
                    ),
                    Some(key),
                ));
            }
            let (config, splits) = (choice.config, choice.splits);
            // On Hopper's wgmma path over views the filter, stored HWIO in f16, is read as
            // the `[R·S·C, K]` matrix it is, which TMA copies (the im2col the threads
            // gather); elsewhere it is read through the view.
            let filter_matrix = pointwise
                || (f16
                    && nhwc
                    && !narrow
                    && c.groups == 1
                    && config.get("wg").unwrap_or(0) > 0
                    && g.tensor(w).layout == Layout::FilterRsck
                    && g.tensor(w).dtype == DType::F16
                    && gn % 8 == 0);
            let weights = if filter_matrix {
                let matrix = te::placeholder(&format!("{name}_w_rsck"), &[gk, gn], DType::F16);
                vals.adopt(w, &matrix);
                matrix
            } else {
                view_weights()
            };
            let last = choose::split_last(limits, chooser.choices).map_err(fail)?;
            let split = (splits > 1).then(|| Split::new(gm, gn, splits).on_target(last));
            // The product the epilogue reads: the template's result, or the sum of the
            // split parts.
            let gemm = match &split {
                Some(sp) => sp.sum.clone(),
                None => te::placeholder("y_gemm", &[gm, gn], DType::F32),
            };
            let gemm_read = gemm.clone();
            vals.set_root(
                node.output,
                Box::new(move |ix: &[Expr]| {
                    let row = v.row([ix[0].clone(), ix[2].clone(), ix[3].clone()]);
                    with_bias(gemm_read.at(&[row, ix[1].clone()]), &ix[1])
                }),
            );
            let out = output(vals);
            let layout = if narrow {
                "over an NHWC4 f16 copy of its NCHW input, a kernel of its own,"
            } else if pointwise {
                "(NHWC, 1×1: its input and filter read as the stored matrices they are)"
            } else if nhwc {
                "(NHWC)"
            } else {
                "(NCHW)"
            };
            // The padded copy first, where there is one.
            let after_copy = |func: Func| match &copied {
                Some((first, padded)) => join(name, first.clone(), func, padded),
                None => func,
            };
            let (product, what) =
                Matmul::of(f16, &config).map_err(|e| fail(LowerError::Kernels(e)))?;
            // Which operands Hopper's path copies how: TMA copies stored tensors only.
            let how = if pointwise {
                matmul_f16::TMA_FILLED
            } else if filter_matrix {
                "(the im2col thread-gathered, the filter TMA-filled)"
            } else {
                matmul_f16::GATHERED
            };
            let what = what.replace(matmul_f16::TMA_FILLED, how);
            if let Some(sp) = split {
                let func = sp
                    .build(name, &cols, &weights, &out, &product)
                    .map_err(|e| fail(LowerError::Kernels(e)))?;
                return Ok((
                    after_copy(func),
                    format!(
                        "implicit-gemm {layout} on the {what} ({why}), {}",
                        sp.describe(&product)
                    ),
                    Some(key),
                ));
            }
            let anchor = product
                .template_over(name, &cols, &weights, &gemm)
                .map_err(|e| fail(e.into()))?;
            let fused = fuse(&anchor, &out).map_err(|e| fail(e.into()))?;
            Ok((
                after_copy(fused.func),
                format!("implicit-gemm {layout} on the {what} ({why})"),
                Some(key),
            ))
        }
        ConvVariant::Grouped => {
            let operands = conv_grouped::Operands {
                conv: *c,
                view: d.view,
                x,
                w,
                bias,
                y: node.output,
            };
            let (func, what, key) =
                conv_grouped::lower(g, operands, vals, name, chooser, output).map_err(fail)?;
            Ok((func, what, Some(key)))
        }
        ConvVariant::Depthwise if !own_buffers => {
            let layout = if g.tensor(x).layout == Layout::ChannelsLast {
                ConvLayout::Nhwc
            } else {
                ConvLayout::Nchw
            };
            let v = d.view;
            let stride = c.strides[0] as i64;
            let (config, why) = depthwise::rule_config(limits, v.r, stride, layout);
            let p = depthwise::DepthwiseParams::from_config(&config).map_err(|e| fail(e.into()))?;
            let func = depthwise_over(
                vals,
                [x, w, node.output],
                [v.n, d.c, v.h, v.w],
                [v.r, stride],
                (&p, layout),
                with_bias,
                &output,
                name,
            )
            .map_err(fail)?;
            let what = depthwise::describe(&config).unwrap_or_else(|e| e);
            let (lay, dt) = (
                if layout == ConvLayout::Nhwc {
                    "NHWC"
                } else {
                    "NCHW"
                },
                g.tensor(x).dtype,
            );
            Ok((
                func,
                format!(
                    "depthwise template over views ({lay}, {dt} loads, f32 sums): {what} ({why})"
                ),
                None,
            ))
        }
        ConvVariant::Depthwise => {
            let config = depthwise::default_config(limits);
            let p = depthwise::DepthwiseParams::from_config(&config).map_err(|e| fail(e.into()))?;
            let v = d.view;
            let anchor = depthwise::template([v.n, d.c, v.h, v.w], v.r, c.strides[0] as i64, &p)
                .map_err(|e| fail(e.into()))?;
            let bufs: Vec<Buffer> = anchor.buffer_params().cloned().collect();
            let [a, wt, result] = bufs.as_slice() else {
                return Err(fail(LowerError::Refused(format!(
                    "the depthwise template has {} parameters, not 3",
                    bufs.len()
                ))));
            };
            vals.adopt(x, a);
            vals.adopt(w, wt);
            let result = result.clone();
            vals.set_root(
                node.output,
                Box::new(move |ix: &[Expr]| with_bias(result.at(ix), &ix[1])),
            );
            let out = output(vals);
            let fused = fuse(&anchor, &out).map_err(|e| fail(e.into()))?;
            let what = depthwise::describe(&config).unwrap_or_else(|e| e);
            Ok((
                fused.func,
                format!("depthwise template: {what} (default config)"),
                None,
            ))
        }
        ConvVariant::Direct => {
            let v = d.view;
            let (rc, rr, rs) = (
                te::reduce_axis("rc", v.c),
                te::reduce_axis("rr", v.r),
                te::reduce_axis("rs", v.s),
            );
            let kg = v.k / c.groups as i64;
            // Over the output's dimensions in its memory order: consecutive threads
            // compute consecutive outputs as stored (channels, in NHWC).
            let out_t = g.tensor(node.output);
            let order = memory_order(out_t.layout, 4);
            let logical = [("n", v.n), ("k", v.k), ("oh", v.oh), ("ow", v.ow)];
            let axes: Vec<(&str, i64)> = order.iter().map(|&i| logical[i]).collect();
            let acc = te::compute("acc", &axes, |ix| {
                let ix = in_logical_order(&order, ix);
                let ch = ix[1].clone() / kg * v.c + rc.expr();
                let (n, oh, ow) = (ix[0].clone(), ix[2].clone(), ix[3].clone());
                let at = [n, ch, oh, ow, rr.expr(), rs.expr()];
                let x_val = v.window(at, DType::F32, |at| vals.at_as(x, &at, DType::F32));
                let w_val = vals.at(w, &[ix[1].clone(), rc.expr(), rr.expr(), rs.expr()]);
                te::sum(x_val * w_val, &[&rc, &rr, &rs])
            });
            let inputs: Vec<Buffer> = vals.buffers().into_iter().map(|(_, b)| b).collect();
            let acc_read = acc.clone();
            vals.set_root(
                node.output,
                Box::new(move |ix: &[Expr]| {
                    with_bias(acc_read.at(&in_memory_order(&order, ix)), &ix[1])
                }),
            );
            let out = output(vals);
            let func = rules::reduction(name, &inputs, &acc, &out)
                .map_err(|e| fail(LowerError::Kernels(e)))?;
            Ok((
                func,
                format!(
                    "rule: direct convolution ({} groups), one thread per output",
                    c.groups
                ),
                None,
            ))
        }
    }
}

/// The sizes of convolution `d` as Winograd F(2×2, 3×3) takes it, where it can: f32
/// operands, one group, a 3×3 window at stride 1 and dilation 1, the same padding on
/// every side.
fn winograd_dims(d: &Geometry, f16: bool) -> Option<WinogradDims> {
    let (c, v) = (d.conv, d.view);
    let pad = c.pads[0] as i64;
    let fits = !f16
        && c.groups == 1
        && (v.r, v.s) == (3, 3)
        && c.strides == [1, 1]
        && c.dilations == [1, 1]
        && c.pads.iter().all(|&p| p as i64 == pad)
        && pad <= 2;
    let wd = WinogradDims {
        n: v.n,
        c: d.c,
        h: v.h,
        w: v.w,
        k: v.k,
        pad,
    };
    (fits && wd.out() == (v.oh, v.ow)).then_some(wd)
}

/// The convolution as Winograd F(2×2, 3×3) (`weft_kernels::winograd`): its input
/// and filter read through their views (layouts, inlined producers) as prologues of the
/// transforms, its epilogue chain fused into the output transform's stores.
/// `[x, w, y]`: the input, filter and output tensors.
fn winograd<'g>(
    vals: &Values<'g>,
    [x, w, y_t]: [TensorId; 3],
    wd: &WinogradDims,
    config: &weft_kernels::Config,
    with_bias: impl Fn(Expr, &Expr) -> Expr + 'g,
    output: &impl Fn(&Values) -> Buffer,
    name: &str,
) -> Result<Func, LowerError> {
    let p = matmul::MatmulParams::from_config(config)?;
    let x_view = te::compute(
        "x_view",
        &[("n", wd.n), ("c", wd.c), ("h", wd.h), ("w", wd.w)],
        |ix| vals.at_as(x, ix, DType::F32),
    );
    let w_view = te::compute(
        "w_view",
        &[("k", wd.k), ("c", wd.c), ("r", 3), ("s", 3)],
        |ix| vals.at_as(w, ix, DType::F32),
    );
    let (oh, ow) = wd.out();
    let y = te::placeholder("y_winograd", &[wd.n, wd.k, oh, ow], DType::F32);
    let y_read = y.clone();
    vals.set_root(
        y_t,
        Box::new(move |ix: &[Expr]| with_bias(y_read.at(ix), &ix[1])),
    );
    let out = output(vals);
    let anchor = winograd::template_over(name, wd, &x_view, &w_view, &y, &p)?;
    Ok(fuse(&anchor, &out)?.func)
}

/// The depthwise convolution on the depthwise template over the group's views
/// (`weft_kernels::depthwise::template_over`): its input and filter read through their
/// stored types and layouts (and an inlined prologue) as f32, its epilogue chain fused
/// into the stores. `[x, w, y]`: the input, filter and output tensors; `size` the
/// input's `[n, c, h, w]`; `[k, stride]` the window.
#[allow(clippy::too_many_arguments)]
fn depthwise_over<'g>(
    vals: &Values<'g>,
    [x, w, y_t]: [TensorId; 3],
    size: [i64; 4],
    [k, stride]: [i64; 2],
    (p, layout): (&depthwise::DepthwiseParams, ConvLayout),
    with_bias: impl Fn(Expr, &Expr) -> Expr + 'g,
    output: &impl Fn(&Values) -> Buffer,
    name: &str,
) -> Result<Func, LowerError> {
    let [n, c, h, wd] = size;
    let pad = (k - 1) / 2;
    let (oh, ow) = (
        (h + 2 * pad - k) / stride + 1,
        (wd + 2 * pad - k) / stride + 1,
    );
    let x_view = te::compute("x_view", &[("n", n), ("c", c), ("h", h), ("w", wd)], |ix| {
        vals.at_as(x, ix, DType::F32)
    });
    let w_view = te::compute("w_view", &[("c", c), ("o", 1), ("r", k), ("s", k)], |ix| {
        vals.at_as(w, ix, DType::F32)
    });
    let y = te::placeholder("y_depthwise", &[n, c, oh, ow], DType::F32);
    let y_read = y.clone();
    vals.set_root(
        y_t,
        Box::new(move |ix: &[Expr]| with_bias(y_read.at(ix), &ix[1])),
    );
    let out = output(vals);
    let anchor = depthwise::template_over(name, size, k, stride, p, layout, &x_view, &w_view, &y)?;
    Ok(fuse(&anchor, &out)?.func)
}
