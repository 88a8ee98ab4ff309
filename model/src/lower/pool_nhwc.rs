//! A global pool over a channels-last image in two reductions: each image's pixels cut
//! into chunks, a thread per `(image, chunk, channel)` reducing its chunk (consecutive
//! threads on consecutive channels: one coalesced load of a pixel's channels a warp),
//! then a thread per `(image, channel)` combining the chunks, the group's epilogue fused
//! into that store.
//!
//! Why: a row per channel (the row template's view of a pool) walks an NHWC image `C`
//! elements apart, a sector a load; EfficientNet-B0's squeeze-and-excitation pools at
//! batch 8 ran 12–23 µs each that way on an H200 (`[8, 144, 56, 56]`: 7.2 MB in 22.7
//! µs, 0.3 TB/s), five of them 83 µs of a 720-µs model, where Inductor's two reduction
//! kernels take 5–9 µs (measurements/h200-2026-11-30f, call 1).

use weft_codegen_common::TargetLimits;
use weft_graph::Graph;
use weft_graph::Layout;
use weft_graph::op::{GlobalPool, PoolKind};
use weft_graph::partition::Group;
use weft_ir::func::Func;
use weft_ir::prelude::*;

use super::rows::{chain, inputs};
use super::rules;
use super::values::Values;
use crate::error::LowerError;

/// The environment variable that lowers channels-last global pools as before (`0`: a
/// row per channel on the row template) instead of in two reductions (unset or `1`): a
/// knob for timing the two on whole models; other values are refused.
pub const POOL_SPLIT_ENV: &str = "WEFT_POOL_SPLIT";

/// The fewest pixels a thread of the first reduction walks (where the image's pixel
/// count has such a divisor): enough loads a thread to hide their latency, few enough
/// that the threads fill the GPU.
pub const MIN_CHUNK: i64 = 32;

/// Whether [`POOL_SPLIT_ENV`] leaves the two reductions on (a value other than `0` or
/// `1` is refused).
pub(crate) fn switched_on() -> Result<bool, LowerError> {
    super::choose::switch(POOL_SPLIT_ENV, "two reductions", "a row per channel")
}

/// The fewest pixels an image has where [`takes`] splits its pool.
pub const MIN_PIXELS: usize = 28 * 28;

/// Whether group `group`'s root, a global pool, reads channels-last images, several of
/// them, of at least [`MIN_PIXELS`], on a target whose compiler takes a register cap
/// (CUDA, HIP: where it was measured; on Vulkan each of its three dispatches costs ~5 µs
/// of floor, untimed against the row template there): then [`lower`] takes it (where
/// [`switched_on`]).
/// Measured on the H200 (fp16, 2026-11-30, fifteenth session,
/// `measurements/h200-2026-11-30f` calls 2–3): at batch 8 EfficientNet-B0's pools at
/// 112², 56² and 28² ran 12.4 → 9.4, 22.7 → 6.1, 16.2 → 5.5, 5.8 → 4.3 and 4.8 → 4.2 µs
/// (a row per channel → two reductions), those at 14² 3.3–3.6 → 4.0–4.1 (the row
/// template's blocks then share the image's sectors through L2, and the three kernels
/// cost more than they save); at batch 1 the whole model lost 317 → 331 µs and
/// RegNetY-400MF 291 → 305, so one image keeps the row template.
pub(crate) fn takes(g: &Graph, group: &Group, limits: &TargetLimits) -> bool {
    let x = g.tensor(g.nodes[group.root.0].inputs[0]);
    limits.register_cap
        && x.shape.len() == 4
        && x.layout == Layout::ChannelsLast
        && x.shape[0] >= 2
        && x.shape[2] * x.shape[3] >= MIN_PIXELS
}

/// The pixels a thread of the first reduction walks for an image of `hw` pixels: the
/// smallest divisor of `hw` of at least [`MIN_CHUNK`] (`hw` itself where none is
/// smaller), so that the chunks tile the image exactly.
pub fn chunk(hw: i64) -> i64 {
    (MIN_CHUNK..hw).find(|d| hw % d == 0).unwrap_or(hw)
}

/// The pool `gp` of group `group` as two reductions ([`chunk`]); `output` makes the
/// group's stored output once the root's value is set. Returns the function and what
/// `weft model graph` shows.
pub(crate) fn lower(
    g: &Graph,
    group: &Group,
    gp: &GlobalPool,
    vals: &Values,
    name: &str,
    output: impl Fn(&Values) -> Buffer,
) -> Result<(Func, String), LowerError> {
    let node = &g.nodes[group.root.0];
    let x = node.inputs[0];
    let xs = &g.tensor(x).shape;
    let i = |v: usize| v as i64;
    let (n, c, h, w) = (i(xs[0]), i(xs[1]), i(xs[2]), i(xs[3]));
    let hw = h * w;
    let chunk = chunk(hw);
    let chunks = hw / chunk;
    let kind = gp.kind;
    let reduce = |v: Expr, axes: &[&IterVar]| match kind {
        PoolKind::Max => te::max(v, axes),
        PoolKind::Average => te::sum(v, axes),
    };
    // Each chunk's sum (or maximum) in f32, `[N, chunks, C]`: channels innermost.
    let p = te::reduce_axis("p", chunk);
    let parts = te::compute(
        &format!("{name}_parts"),
        &[("n", n), ("s", chunks), ("c", c)],
        |ix| {
            let pixel = ix[1].clone() * chunk + p.expr();
            let at = [ix[0].clone(), ix[2].clone(), pixel.clone() / w, pixel % w];
            reduce(vals.at_as(x, &at, DType::F32), &[&p])
        },
    );
    let first = rules::reduction(&format!("{name}_parts"), &inputs(vals, &[]), &parts, &parts)
        .map_err(LowerError::Kernels)?;
    // The chunks combined, `[N, C]`, the mean's one division at the end; then the
    // group's epilogue, a thread an output (the reduction rule fuses no epilogue over a
    // computed input).
    let s = te::reduce_axis("s", chunks);
    let pooled = te::compute(&format!("{name}_pooled"), &[("n", n), ("c", c)], |ix| {
        reduce(parts.at(&[ix[0].clone(), s.expr(), ix[1].clone()]), &[&s])
    });
    let second = rules::reduction(
        &format!("{name}_combine"),
        &inputs(vals, &[&parts]),
        &pooled,
        &pooled,
    )
    .map_err(LowerError::Kernels)?;
    let read = pooled.clone();
    vals.set_root(
        node.output,
        Box::new(move |ix: &[Expr]| {
            let v = read.at(&[ix[0].clone(), ix[1].clone()]);
            match kind {
                PoolKind::Max => v,
                PoolKind::Average => v * (1.0 / hw as f64) as f32,
            }
        }),
    );
    let out = output(vals);
    let third = rules::injective(name, &inputs(vals, &[&parts, &pooled]), &out)
        .map_err(LowerError::Kernels)?;
    let what = format!(
        "global pool over NHWC in two reductions: {chunks} chunks of {chunk} pixels an image, \
         a thread per (image, chunk, channel), then a thread per (image, channel) combining \
         them, then the epilogue"
    );
    Ok((
        chain(name, vec![first, second, third], &[parts, pooled]),
        what,
    ))
}
