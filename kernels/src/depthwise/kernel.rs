//! The depthwise template's kernel, written with [`weft_ir::template`].

use weft_ir::func::Func;
use weft_ir::mapping::spatial;
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, TemplateError, load_or};

use super::DepthwiseParams;
use crate::conv_views::ConvLayout;
use crate::{block_index, ceil_div, grid_for};

/// Loops `0..extent` unrolled or serial, as the config says.
fn reduce_loop(
    kb: &mut KernelBuilder,
    unroll: bool,
    name: &str,
    extent: i64,
    body: impl FnOnce(&mut KernelBuilder, Expr),
) {
    if unroll {
        kb.unroll(name, extent, body);
    } else {
        kb.serial(name, extent, body);
    }
}

/// The depthwise convolution of `x[b, c, h, w]` by `w[c, 1, k, k]` at `stride`, "same"
/// padding `(k − 1) / 2`, with parameters `p` (already checked): f32 NCHW buffers of its
/// own.
pub fn template(
    [b, c, h, w]: [i64; 4],
    k: i64,
    stride: i64,
    p: &DepthwiseParams,
) -> Result<Func, TemplateError> {
    let pad = (k - 1) / 2;
    let (oh, ow) = (
        (h + 2 * pad - k) / stride + 1,
        (w + 2 * pad - k) / stride + 1,
    );
    let mut t = Template::new("depthwise_conv2d");
    let x = t.input("A", &[b, c, h, w], DType::F32);
    let wt = t.input("W", &[c, 1, k, k], DType::F32);
    let out = t.output("depthwise_conv", &[b, c, oh, ow], DType::F32);
    let ops = Operands {
        x: &x,
        w: &wt,
        y: &out,
    };
    add_kernel(&mut t, [b, c, h, w], k, stride, p, ConvLayout::Nchw, ops);
    t.finish()
}

/// The depthwise convolution over given buffers, indexed logically whatever their
/// storage: `x[b, c, h, w]`, `w[c, 1, k, k]` and `y[b, c, oh, ow]` (f32 values; te
/// placeholders or computed tensors, into which [`weft_ir::fusion`] inlines the views a
/// model reads its operands through — an f16 or NHWC tensor, a fused prologue — and
/// its epilogue chain). `layout` is how `x` and `y` lie in memory: for
/// [`ConvLayout::Nhwc`] the threads of a block walk its channels fastest, so that
/// neighbouring threads load and store neighbouring elements, and its shared tile is
/// channels innermost (no bank conflicts between those threads).
#[allow(clippy::too_many_arguments)]
pub fn template_over(
    name: &str,
    size: [i64; 4],
    k: i64,
    stride: i64,
    p: &DepthwiseParams,
    layout: ConvLayout,
    x: &Buffer,
    w: &Buffer,
    y: &Buffer,
) -> Result<Func, TemplateError> {
    let mut t = Template::new(name);
    for buffer in [x, w, y] {
        t.param(buffer);
    }
    add_kernel(&mut t, size, k, stride, p, layout, Operands { x, w, y });
    t.finish()
}

/// The kernel's three operands.
#[derive(Clone, Copy)]
struct Operands<'a> {
    x: &'a Buffer,
    w: &'a Buffer,
    y: &'a Buffer,
}

/// Adds the kernel of the depthwise convolution to `t`.
fn add_kernel(
    t: &mut Template,
    [b, c, h, w]: [i64; 4],
    k: i64,
    stride: i64,
    p: &DepthwiseParams,
    layout: ConvLayout,
    ops: Operands,
) {
    let (x, wt, out) = (ops.x, ops.w, ops.y);
    let nhwc = layout == ConvLayout::Nhwc;
    let pad = (k - 1) / 2;
    let (oh, ow) = (
        (h + 2 * pad - k) / stride + 1,
        (w + 2 * pad - k) / stride + 1,
    );
    let ([th, tw], [vh, vw], cb) = (p.tile, p.per_thread, p.channels);
    let threads = p.threads();
    let planes = b * c;
    let (tiles_h, tiles_w) = (ceil_div(oh, th), ceil_div(ow, tw));
    let tiles = tiles_h * tiles_w;
    let blocks = ceil_div(planes, cb) * tiles;
    let grid = grid_for(blocks);

    t.kernel(grid, threads, |kb| {
        let tx = kb.thread_x();
        let pid = block_index(kb, grid);
        let body = |kb: &mut KernelBuilder| {
            let group = kb.let_("group", pid.clone() / tiles);
            let tile = kb.let_("tile", pid.clone() % tiles);
            let oh0 = kb.let_("oh0", tile.clone() / tiles_w * th);
            let ow0 = kb.let_("ow0", tile % tiles_w * tw);
            // Input element (row, col) of plane `ch` of the block, zero outside.
            let input = |ch: Expr, row: Expr, col: Expr| {
                let plane = group.clone() * cb + ch;
                let inside = te::all([
                    plane.clone().lt(planes),
                    row.clone().ge(0),
                    row.clone().lt(h),
                    col.clone().ge(0),
                    col.clone().lt(w),
                ]);
                let at = [plane.clone() / c, plane % c, row, col];
                load_or(x, at, inside, 0.0f32)
            };
            let weight = |ch: Expr, i: Expr| {
                let plane = group.clone() * cb + ch;
                let at = [plane.clone() % c, Expr::int(0), i.clone() / k, i % k];
                load_or(wt, at, plane.lt(planes), 0.0f32)
            };

            let (sh, sw) = DepthwiseParams::window(th, tw, k, stride);
            let smem = p.shared.then(|| {
                // NHWC: channels innermost, as the threads reading it walk them.
                let tile_shape = if nhwc { [sh, sw, cb] } else { [cb, sh, sw] };
                let tile_s = kb.shared("A_smem", &tile_shape, DType::F32);
                let w_s = kb.shared("W_smem", &[cb, k * k], DType::F32);
                let (ih0, iw0) = (
                    kb.let_("ih0", oh0.clone() * stride - pad),
                    kb.let_("iw0", ow0.clone() * stride - pad),
                );
                // Cooperative loads: element `e · threads + tx` of the flattened tile.
                let each =
                    |kb: &mut KernelBuilder, total: i64, f: &dyn Fn(&mut KernelBuilder, Expr)| {
                        kb.unroll("e", ceil_div(total, threads), |kb, e| {
                            let i = kb.let_("i", e * threads + tx.clone());
                            if total % threads == 0 {
                                f(kb, i);
                            } else {
                                kb.if_(i.clone().lt(total), |kb| f(kb, i));
                            }
                        });
                    };
                each(kb, cb * sh * sw, &|kb, i| {
                    if nhwc {
                        // Consecutive threads, consecutive channels of one pixel.
                        let (r, col, ch) = (i.clone() / (sw * cb), i.clone() / cb % sw, i % cb);
                        let value = input(
                            ch.clone(),
                            ih0.clone() + r.clone(),
                            iw0.clone() + col.clone(),
                        );
                        kb.store(&tile_s, [r, col, ch], value);
                        return;
                    }
                    let (ch, r, col) = (i.clone() / (sh * sw), i.clone() / sw % sh, i % sw);
                    let value = input(
                        ch.clone(),
                        ih0.clone() + r.clone(),
                        iw0.clone() + col.clone(),
                    );
                    kb.store(&tile_s, [ch, r, col], value);
                });
                each(kb, cb * k * k, &|kb, i| {
                    let (ch, j) = (i.clone() / (k * k), i % (k * k));
                    kb.store(&w_s, [ch.clone(), j.clone()], weight(ch, j));
                });
                kb.barrier();
                (tile_s, w_s)
            });

            // NHWC: the channel is the fastest task index, so a warp's threads load and
            // store one pixel's consecutive channels.
            let task = |kb: &mut KernelBuilder, [ch, ti, tj]: [Expr; 3]| {
                let acc = kb.local("acc", &[vh, vw], DType::F32);
                kb.unroll("a", vh, |kb, a| {
                    kb.unroll("b", vw, |kb, bb| kb.store(&acc, [a, bb], 0.0f32));
                });
                // The thread's first output, relative to the block's tile.
                let (r0, c0) = (kb.let_("r0", ti * vh), kb.let_("c0", tj * vw));
                match &smem {
                    Some((tile_s, w_s)) => {
                        reduce_loop(kb, p.unroll, "ry", k, |kb, ry| {
                            reduce_loop(kb, p.unroll, "rx", k, |kb, rx| {
                                let wv = kb
                                    .let_("wv", w_s.at(&[ch.clone(), ry.clone() * k + rx.clone()]));
                                kb.unroll("a", vh, |kb, a| {
                                    kb.unroll("b", vw, |kb, bb| {
                                        let row = (r0.clone() + a.clone()) * stride + ry.clone();
                                        let col = (c0.clone() + bb.clone()) * stride + rx.clone();
                                        let at = if nhwc {
                                            [row, col, ch.clone()]
                                        } else {
                                            [ch.clone(), row, col]
                                        };
                                        let v = tile_s.at(&at) * wv.clone();
                                        let sum = acc.at(&[a.clone(), bb.clone()]) + v;
                                        kb.store(&acc, [a.clone(), bb], sum);
                                    });
                                });
                            });
                        });
                    }
                    None => {
                        let (wh, ww) = DepthwiseParams::window(vh, vw, k, stride);
                        let win = kb.local("win", &[wh, ww], DType::F32);
                        let wr = kb.local("w_reg", &[k * k], DType::F32);
                        let ih = kb.let_("ih", (oh0.clone() + r0.clone()) * stride - pad);
                        let iw = kb.let_("iw", (ow0.clone() + c0.clone()) * stride - pad);
                        kb.unroll("i", k * k, |kb, i| {
                            kb.store(&wr, [i.clone()], weight(ch.clone(), i));
                        });
                        kb.unroll("r", wh, |kb, r| {
                            kb.unroll("q", ww, |kb, q| {
                                let value = input(
                                    ch.clone(),
                                    ih.clone() + r.clone(),
                                    iw.clone() + q.clone(),
                                );
                                kb.store(&win, [r, q], value);
                            });
                        });
                        kb.unroll("ry", k, |kb, ry| {
                            kb.unroll("rx", k, |kb, rx| {
                                kb.unroll("a", vh, |kb, a| {
                                    kb.unroll("b", vw, |kb, bb| {
                                        let row = a.clone() * stride + ry.clone();
                                        let col = bb.clone() * stride + rx.clone();
                                        let v = win.at(&[row, col])
                                            * wr.at(&[ry.clone() * k + rx.clone()]);
                                        let sum = acc.at(&[a.clone(), bb.clone()]) + v;
                                        kb.store(&acc, [a.clone(), bb], sum);
                                    });
                                });
                            });
                        });
                    }
                }
                // Registers -> out, where inside the output.
                let plane = kb.let_("plane", group.clone() * cb + ch.clone());
                kb.unroll("a", vh, |kb, a| {
                    kb.unroll("b", vw, |kb, bb| {
                        let row = oh0.clone() + r0.clone() + a.clone();
                        let col = ow0.clone() + c0.clone() + bb.clone();
                        let inside = te::all([
                            plane.clone().lt(planes),
                            row.clone().lt(oh),
                            col.clone().lt(ow),
                        ]);
                        let at = [plane.clone() / c, plane.clone() % c, row, col];
                        kb.store_if(inside, out, at, acc.at(&[a, bb]));
                    });
                });
            };
            if nhwc {
                let mapping = spatial(&[th / vh, tw / vw, cb]);
                kb.for_tasks("i, j, ch", mapping, tx.clone(), |kb, [ti, tj, ch]| {
                    task(kb, [ch, ti, tj])
                });
            } else {
                let mapping = spatial(&[cb, th / vh, tw / vw]);
                kb.for_tasks("ch, i, j", mapping, tx.clone(), |kb, [ch, ti, tj]| {
                    task(kb, [ch, ti, tj])
                });
            }
        };
        if grid[0] * grid[1] > blocks {
            kb.if_(pid.clone().lt(blocks), body);
        } else {
            body(kb);
        }
    });
}
