//! Windowed pools (max and average, any window, stride and padding) over channels-last
//! images, several channels a thread: a thread per `(image, output pixel, vector of
//! channels)`, each tap of its window one aligned vector load of those channels (8
//! halves or 4 floats: 16 bytes) into registers, predicated on the tap lying inside the
//! image; f32 sums (or maxima) lane by lane, an average's sum divided once, and the
//! group's output staged in registers and stored by vectors too.
//!
//! Why: the reduction rule gives each output a thread and each tap a load of one element
//! (2 bytes in f16): a warp's load of a tap moves 64 bytes, and a pool issues a load
//! instruction per element and tap where vectors issue one per 8 elements.
//! Inception-v3's 3×3 average pools at batch 8 (fp16, NHWC, H200) took 84 µs that way
//! where Inductor's kernel, 16-byte loads of consecutive channels a thread, takes 55
//! (`docs/corpus-batch8.md`). [`POOL_VEC_ENV`] turns it off for the A/B ([`MIN_IMAGES`]
//! has what it measured on CUDA).
//!
//! The vector accesses are the lowering's ([`weft_ir::lower`]): a vectorized loop whose
//! body is one copy, `win[v] = inside ? x[.., c0 + v] : fill`, becomes one vector load
//! under the lane-invariant `inside` where the lowering proves both sides aligned, which
//! [`lanes`] makes sure of (channel counts, and a Concat's, multiples of the lanes).

use weft_graph::op::{Pool, PoolKind};
use weft_graph::partition::Group;
use weft_graph::{Graph, Layout};
use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_ir::template::Template;
use weft_kernels::per_item;

use super::pool::divisor;
use super::values::{Values, in_memory_order};
use crate::error::LowerError;

/// The environment variable that lowers channels-last windowed pools as before (`0`:
/// the reduction rule, a thread and a 2-byte load a tap per output) instead of several
/// channels a thread by vector loads (unset or `1`): a knob for timing the two on whole
/// models; other values are refused.
pub const POOL_VEC_ENV: &str = "WEFT_POOL_VEC";

/// Bytes of one vector load: 8 halves or 4 floats (`LDG.128`).
pub const VECTOR_BYTES: i64 = 16;

/// The most taps of a window the kernel unrolls (a 7×7 window): past it the reduction
/// rule keeps the pool.
pub const MAX_TAPS: i64 = 49;

/// Threads per block.
const THREADS: i64 = 256;

/// The fewest images a pool takes the vector path over. Measured on the H200 (fp16,
/// 2026-12-01, sixteenth session, `measurements/h200-2026-12-01` call 2, A/B by
/// [`POOL_VEC_ENV`], two rounds): at batch 8 Inception-v3 1.257 → 1.237 ms (its 14
/// windowed pools 108 → 92 µs), GoogLeNet 475 → 459 µs, DenseNet-121 1.075 → 1.069 ms,
/// ResNet-50 627 → 625 µs; at batch 1 Inception-v3 598 → 606 µs and GoogLeNet 249 → 250
/// (an eighth of the threads, 40–170 blocks of them at one image's sizes, leave the
/// GPU's memory latency less hidden than the rule's), so one image keeps the rule.
pub const MIN_IMAGES: usize = 2;

/// Whether [`POOL_VEC_ENV`] leaves the vector path on (a value other than `0` or `1` is
/// refused).
pub(crate) fn switched_on() -> Result<bool, LowerError> {
    super::choose::switch(
        POOL_VEC_ENV,
        "several channels a thread by vector loads",
        "the reduction rule, one thread per output",
    )
}

/// Channels a thread of pool `p` (group `group`'s root) takes: a 16-byte vector of the
/// input's element type, where [`lower`] takes the pool; `None` where it keeps the
/// reduction rule. It takes it on every target (each emitter writes a 16-byte copy as
/// its own vector loads: `uint4` in CUDA and HIP, two `vec4<f16>` in WGSL) over a
/// stored channels-last f16 or f32 input of at least [`MIN_IMAGES`] images whose
/// channel runs are aligned to the vector (channel counts, and a Concat's it lies in,
/// multiples of the lanes), written channels-last with no epilogue (the stored value at
/// an output index is the pool's at the same index, which the thread holds), for
/// windows of at most [`MAX_TAPS`] taps.
pub(crate) fn lanes(g: &Graph, group: &Group, p: &Pool, vals: &Values) -> Option<i64> {
    let x = g.nodes[group.root.0].inputs[0];
    let (xt, yt) = (g.tensor(x), g.tensor(group.output));
    let lanes = match xt.dtype {
        DType::F16 | DType::F32 => VECTOR_BYTES / xt.dtype.bytes() as i64,
        DType::I32 | DType::U32 | DType::Bool => return None,
    };
    let taps = (p.kernel[0] * p.kernel[1]) as i64;
    let fits = xt.shape.len() == 4
        && xt.shape[0] >= MIN_IMAGES
        && xt.layout == Layout::ChannelsLast
        && yt.layout == Layout::ChannelsLast
        && group.epilogue.is_empty()
        && !vals.computes(x)
        && taps <= MAX_TAPS
        && vals.runs_aligned(x, lanes);
    fits.then_some(lanes)
}

/// What `weft model graph` shows of a pool [`lower`] takes at `lanes` channels a thread.
pub(crate) fn what(lanes: i64) -> String {
    format!("rule: reduction, {lanes} channels a thread by {VECTOR_BYTES}-byte loads")
}

/// Pool `p`, group `group`'s root, at `lanes` channels a thread ([`lanes`]); `output`
/// makes the group's stored output (in memory order, channels last) once the root's
/// value is set.
pub(crate) fn lower(
    g: &Graph,
    group: &Group,
    p: &Pool,
    lanes: i64,
    vals: &Values,
    name: &str,
    output: impl Fn(&Values) -> Buffer,
) -> Result<Func, LowerError> {
    let node = &g.nodes[group.root.0];
    let x = node.inputs[0];
    let (xs, ys) = (&g.tensor(x).shape, &g.tensor(node.output).shape);
    let i = |v: usize| v as i64;
    let (h, w) = (i(xs[2]), i(xs[3]));
    let (n, c, oh, ow) = (i(ys[0]), i(ys[1]), i(ys[2]), i(ys[3]));
    let [kh, kw] = p.kernel.map(i);
    let [sh, sw] = p.strides.map(i);
    let [pt, pl, _, _] = p.pads.map(i);
    let out_t = g.tensor(group.output);
    let order = weft_graph::passes::memory_order(out_t.layout, 4);
    let stored = vals.stored(x);
    let xdt = g.tensor(x).dtype;
    let count = divisor(p, h, w);
    let kind = p.kind;
    let vecs = c / lanes;
    // Padding never wins a maximum and adds nothing to a sum.
    let (init, fill) = match kind {
        PoolKind::Max => (
            Expr::f32(f32::MIN),
            match xdt {
                DType::F16 => Expr::constant(f64::from(half::f16::MIN), DType::F16),
                _ => Expr::constant(f64::from(f32::MIN), xdt),
            },
        ),
        PoolKind::Average => (Expr::f32(0.0), Expr::zero(xdt)),
    };

    let mut t = Template::new(name);
    t.param(&vals.buffer(x));
    let mut made = None;
    per_item(&mut t, n * oh * ow * vecs, THREADS, |kb, idx| {
        // Consecutive threads on consecutive vectors of one pixel's channels.
        let cv = kb.let_("cv", idx.clone() % vecs);
        let col = kb.let_("ow", idx.clone() / vecs % ow);
        let row = kb.let_("oh", idx.clone() / (vecs * ow) % oh);
        let img = kb.let_("img", idx / (vecs * ow * oh));
        let c0 = kb.let_("c0", cv * lanes);
        let (y0, x0) = (
            kb.let_("y0", row.clone() * sh - pt),
            kb.let_("x0", col.clone() * sw - pl),
        );
        let acc = kb.local("acc", &[lanes], DType::F32);
        let win = kb.local("win", &[lanes], xdt);
        kb.unroll("v", lanes, |kb, v| kb.store(&acc, [v], init.clone()));
        kb.unroll("ry", kh, |kb, ry| {
            kb.unroll("rx", kw, |kb, rx| {
                let (iy, jx) = (y0.clone() + ry, x0.clone() + rx);
                let inside = te::all([
                    iy.clone().ge(0),
                    iy.clone().lt(h),
                    jx.clone().ge(0),
                    jx.clone().lt(w),
                ]);
                // One vector load of the tap's channels, `fill` where it is padding.
                kb.vectorized("v", lanes, |kb, v| {
                    let at = [img.clone(), c0.clone() + v.clone(), iy, jx];
                    let value = Expr::if_then_else(inside, stored.load(&at), fill.clone());
                    kb.store(&win, [v], value);
                });
                kb.unroll("v", lanes, |kb, v| {
                    let lane = std::slice::from_ref(&v);
                    let (a, e) = (acc.at(lane), win.at(lane).cast(DType::F32));
                    let next = match kind {
                        PoolKind::Max => a.max(e),
                        PoolKind::Average => a + e,
                    };
                    kb.store(&acc, [v], next);
                });
            });
        });
        if let Some(count) = &count {
            // The sum divided once, the same divisor for every lane of the pixel.
            let by = kb.let_(
                "count",
                count(&[img.clone(), c0.clone(), row.clone(), col.clone()]),
            );
            kb.unroll("v", lanes, |kb, v| {
                kb.store(&acc, [v.clone()], acc.at(&[v]) / by.clone());
            });
        }
        // The pool's value at channel `c` of this pixel is lane `c - c0` of the
        // thread's sums: the group's output (no epilogue, `lanes`) read at this pixel's
        // channels is staged in registers in its own type, then stored by vectors.
        let (read, first) = (acc.clone(), c0.clone());
        vals.set_root(
            node.output,
            Box::new(move |ix: &[Expr]| read.at(&[ix[1].clone() - first.clone()])),
        );
        let out = output(vals);
        let staged = kb.local("staged", &[lanes], out.dtype());
        let at = |ch: Expr| in_memory_order(&order, &[img.clone(), ch, row.clone(), col.clone()]);
        kb.unroll("v", lanes, |kb, v| {
            let value = out.at(&at(c0.clone() + v.clone()));
            kb.store(&staged, [v], value);
        });
        let width = lanes.min(VECTOR_BYTES / out.dtype().bytes() as i64);
        for part in 0..lanes / width {
            let first = part * width;
            kb.copy(
                width,
                &out,
                at(c0.clone() + first),
                &staged,
                [Expr::int(first)],
            );
        }
        made = Some(out);
    });
    let out = made.ok_or_else(|| LowerError::Refused("the pool's kernel was not built".into()))?;
    // Fusion inlines the loads of the output's own expression (the staging above) and
    // keeps its stores: the stored output is the function's last parameter.
    t.param(&out);
    let anchor = t.finish()?;
    Ok(fuse(&anchor, &out)?.func)
}
