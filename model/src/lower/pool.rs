//! Pooling as te reductions, for the reduction rule: max over the window (padding never
//! wins), average over the window with ONNX's divisor (the elements inside the input,
//! or the window's part inside input and padding with `count_include_pad`).

use weft_graph::Graph;
use weft_graph::op::{GlobalPool, Pool, PoolKind, Reduce, ReduceKind, Window};
use weft_graph::partition::Group;
use weft_ir::prelude::*;

use super::values::{Values, in_logical_order};

/// The most elements of one image a global pool reduces by the reduction rule (one
/// thread per output, walking its image serially): the 7×7 and 8×8 images CNN heads
/// pool have thousands of channels and short walks. Past it (squeeze-and-excitation
/// blocks pool 112×112 images of 16–64 channels: a few dozen threads walking 12544
/// elements each) the pool is a row reduction on the rows template.
const GLOBAL_POOL_BY_RULE: usize = 64;

/// Whether group `group`'s root, a global pool, is lowered as a row reduction
/// ([`global_as_reduce`]) rather than by the reduction rule.
pub(crate) fn global_as_rows(g: &Graph, group: &Group) -> bool {
    let xs = &g.tensor(g.nodes[group.root.0].inputs[0]).shape;
    xs.len() == 4 && xs[2] * xs[3] > GLOBAL_POOL_BY_RULE
}

/// The global pool `gp` as the reduction it is: the mean or maximum over H and W,
/// dimensions kept (`[N, C, H, W]` → `[N, C, 1, 1]`).
pub(crate) fn global_as_reduce(gp: &GlobalPool) -> Reduce {
    let kind = match gp.kind {
        PoolKind::Max => ReduceKind::Max,
        PoolKind::Average => ReduceKind::Mean,
    };
    Reduce {
        kind,
        axes: vec![2, 3],
        keep_dims: true,
    }
}

/// The reduction computing group `group`'s root pooling node `window`, over the output's
/// dimensions in `order` (the output's memory order: the rule gives consecutive threads
/// consecutive outputs, so that in NHWC they read and write consecutive channels).
pub(crate) fn reduced(
    g: &Graph,
    group: &Group,
    window: Window<'_>,
    vals: &Values,
    order: &[usize],
) -> (Buffer, Option<Divisor>) {
    let node = &g.nodes[group.root.0];
    let x = node.inputs[0];
    let xs = &g.tensor(x).shape;
    let ys = &g.tensor(node.output).shape;
    let i = |v: usize| v as i64;
    let (h, w) = (i(xs[2]), i(xs[3]));
    let logical = [
        ("n", i(ys[0])),
        ("c", i(ys[1])),
        ("oh", i(ys[2])),
        ("ow", i(ys[3])),
    ];
    let axes: Vec<(&str, i64)> = order.iter().map(|&d| logical[d]).collect();
    match window {
        Window::Global(&GlobalPool { kind }) => {
            let (rh, rw) = (te::reduce_axis("rh", h), te::reduce_axis("rw", w));
            let pooled = te::compute("pooled", &axes, |ix| {
                let ix = in_logical_order(order, ix);
                let v = vals.at(x, &[ix[0].clone(), ix[1].clone(), rh.expr(), rw.expr()]);
                match kind {
                    PoolKind::Max => te::max(v, &[&rh, &rw]),
                    PoolKind::Average => te::sum(v * (1.0 / (h * w) as f32), &[&rh, &rw]),
                }
            });
            (pooled, None)
        }
        Window::Pool(p) => window_pool(p, vals, x, h, w, &axes, order),
    }
}

/// What a windowed average's sum is divided by, from the output's logical index
/// `[n, c, oh, ow]`: applied once to the sum, at the store.
pub(crate) type Divisor = Box<dyn Fn(&[Expr]) -> Expr>;

fn window_pool(
    p: &Pool,
    vals: &Values,
    x: weft_graph::TensorId,
    h: i64,
    w: i64,
    axes: &[(&str, i64)],
    order: &[usize],
) -> (Buffer, Option<Divisor>) {
    let [kh, kw] = p.kernel.map(|v| v as i64);
    let [sh, sw] = p.strides.map(|v| v as i64);
    let [pt, pl, _, _] = p.pads.map(|v| v as i64);
    let (rh, rw) = (te::reduce_axis("rh", kh), te::reduce_axis("rw", kw));
    let pooled = te::compute("pooled", axes, |ix| {
        let ix = in_logical_order(order, ix);
        let (y0, x0) = (ix[2].clone() * sh - pt, ix[3].clone() * sw - pl);
        let (iy, jx) = (y0 + rh.expr(), x0 + rw.expr());
        let inside = te::all([
            iy.clone().ge(0),
            iy.clone().lt(h),
            jx.clone().ge(0),
            jx.clone().lt(w),
        ]);
        let at = [ix[0].clone(), ix[1].clone(), iy, jx];
        match p.kind {
            PoolKind::Max => {
                let v = te::if_then_else(inside, vals.at(x, &at), Expr::f32(f32::MIN));
                te::max(v, &[&rh, &rw])
            }
            PoolKind::Average => {
                let v = te::if_then_else(inside, vals.at(x, &at), Expr::f32(0.0));
                te::sum(v, &[&rh, &rw])
            }
        }
    });
    (pooled, divisor(p, h, w))
}

/// What pool `p` over an `h × w` image divides its window's sum by (`None`: a maximum,
/// divided by nothing).
pub(crate) fn divisor(p: &Pool, h: i64, w: i64) -> Option<Divisor> {
    let [kh, kw] = p.kernel.map(|v| v as i64);
    let [sh, sw] = p.strides.map(|v| v as i64);
    let [pt, pl, pb, pr] = p.pads.map(|v| v as i64);
    match p.kind {
        PoolKind::Max => None,
        // The sum divided once, as ONNX Runtime does, not each tap (one IEEE division
        // a tap made Inception-v3's 3×3 average pools 5× slower than its max pools of
        // as many taps on the H200: 52.7 µs against 9.5 at batch 8).
        PoolKind::Average => {
            // The window clipped to the input (or to input + padding).
            let (lo_h, hi_h, lo_w, hi_w) = if p.count_include_pad {
                (-pt, h + pb, -pl, w + pr)
            } else {
                (0, h, 0, w)
            };
            Some(Box::new(move |ix: &[Expr]| {
                let (y0, x0) = (ix[2].clone() * sh - pt, ix[3].clone() * sw - pl);
                let rows = (y0.clone() + kh).min(hi_h) - y0.max(lo_h);
                let cols = (x0.clone() + kw).min(hi_w) - x0.max(lo_w);
                (rows * cols).cast(DType::F32)
            }))
        }
    }
}
