//! Row reductions in one kernel: softmax, layer norm and the plain reductions (sum,
//! mean, max, min) of each row of a `[rows, n]` view, with the row's threads combining
//! their partial results through a shared-memory tree.
//!
//! A block holds `rows_per_block` rows side by side (`threadIdx.y`), each walked by
//! `lanes` threads (`threadIdx.x`, a power of two): a warp or less per row for short
//! rows, a whole block for long ones ([`RowParams::rule`]). Each thread takes the row's
//! elements `e · lanes + tx`; where they are few ([`MAX_KEPT`] at most) it keeps them in
//! registers between the passes, so the row is read from global memory once; longer
//! rows are read again by each pass (their producers, inlined, recomputed).
//!
//! The passes, each ending in one tree: where the target has subgroups
//! ([`TargetLimits::subgroup`]), butterfly shuffles in registers across each run of
//! [`RowParams::shuffle`] lanes, then — for rows wider than that — one partial a run
//! through shared memory, one barrier, and the runs' partials combined by shuffles again
//! (or read in turn); elsewhere a partial per thread into shared memory and `log2(lanes)`
//! halving steps, each behind a barrier. The passes:
//!
//! - softmax: the row's max; the sum of `exp(x − max)`; then `exp(x − max) / sum`;
//! - layer norm: the mean; the mean square of `x − mean` (two passes over registers, no
//!   cancellation where the mean is large against the spread); then
//!   `(x − mean) · rsqrt(var + ε)` (the scale and bias are the caller's epilogue);
//! - sum, mean, max, min: one tree, stored once per row.
//!
//! The view `x` may be a te compute: post-scheduling fusion inlines it into the loads,
//! and the caller fuses its epilogue into the stores of `y` ([`weft_ir::fusion`]),
//! as for any anchor. Every target runs the same kernel but for the trees: CUDA's warps,
//! HIP's wavefronts, Metal's SIMD-groups and a wgpu adapter with `subgroups` shuffle;
//! plain WebGPU uses shared memory and barriers only.
//!
//! Rows so long and so few that a block per row would leave most multiprocessors idle
//! take the split form ([`RowParams::parts`] above 1, [`split`]): each row cut into
//! chunks, a block per chunk, and two kernels — the chunks' partial states, then their
//! combination (and, for softmax and layer norm, the chunks' outputs).

use weft_codegen_common::TargetLimits;
use weft_ir::expr::ReduceOp;
use weft_ir::func::Func;
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, TemplateError, load_or};

use super::{block_index, ceil_div, grid_for};

mod split;

/// The most elements of its row a thread keeps in registers between passes.
pub const MAX_KEPT: i64 = 16;

/// The elements a thread of a split row's chunk should walk: enough to amortize the
/// tree, few enough to keep in registers.
pub const PER_THREAD: i64 = 4;

/// The threads a block of short rows holds (several rows side by side).
pub const BLOCK_THREADS: i64 = 256;

/// What a row reduction computes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowOp {
    /// `exp(x − max) / Σ exp(x − max)` over the row; `y` is `[rows, n]`.
    Softmax,
    /// `(x − mean) · rsqrt(var + epsilon)` over the row; `y` is `[rows, n]`.
    LayerNorm {
        epsilon: f32,
    },
    /// `x · rsqrt(mean(x²) + epsilon)` over the row (the RMS norm); `y` is `[rows, n]`.
    RmsNorm {
        epsilon: f32,
    },
    /// One value per row; `y` is `[rows]`.
    Sum,
    Mean,
    Max,
    Min,
}

impl RowOp {
    fn name(self) -> &'static str {
        match self {
            RowOp::Softmax => "softmax",
            RowOp::LayerNorm { .. } => "layer norm",
            RowOp::RmsNorm { .. } => "RMS norm",
            RowOp::Sum => "sum",
            RowOp::Mean => "mean",
            RowOp::Max => "max",
            RowOp::Min => "min",
        }
    }

    /// Whether it gives one value per row (else one per element).
    pub fn per_row(self) -> bool {
        !matches!(
            self,
            RowOp::Softmax | RowOp::LayerNorm { .. } | RowOp::RmsNorm { .. }
        )
    }
}

/// The fewest elements a chunk of a split row holds: a block's worth of work
/// ([`PER_THREAD`] for each of 1024 threads), so that writing and combining its partial
/// state is little beside reading it; and no more than [`MAX_KEPT`] a thread keep in
/// registers at 256 threads (WebGPU's block), so that the chunk is read from global
/// memory once by each kernel on every target.
pub const MIN_PART: i64 = 4096;

/// The shortest rows the rule splits: two chunks of [`MIN_PART`]. A block per row keeps
/// its row in registers up to [`MAX_KEPT`] elements a thread (16384 at 1024 threads,
/// 4096 at WebGPU's 256) and reads it again each pass beyond, all of it through one
/// multiprocessor while all but `rows` of them idle. From 8192 elements (32 KiB of f32)
/// that stream is long enough that spreading it over chunk blocks should repay the
/// second launch and the partials' round trip through memory (a few microseconds
/// together); shorter rows go through one multiprocessor in about a memory latency or
/// two, which a second launch would not repay. An estimate from those costs, not yet a
/// measurement.
pub const SPLIT_MIN_N: i64 = 2 * MIN_PART;

/// The most chunks a row is split into: the second kernel's threads each combine all
/// of their row's partials, which stays cheap for a few dozen.
pub const MAX_PARTS: i64 = 64;

/// How a row reduction's threads cover the rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowParams {
    /// Threads per row (per chunk of a row, where split), a power of two.
    pub lanes: i64,
    /// Rows a block holds side by side (1 where split).
    pub rows_per_block: i64,
    /// Chunks each row is cut into, each a block's ([`split`]: two kernels, at most
    /// [`MAX_PARTS`]); 1: the one-kernel form, a row wholly within one block.
    pub parts: i64,
    /// Lanes a tree combines by subgroup shuffles (a power of two up to `lanes` and the
    /// target's subgroup size, [`weft_codegen_common::SubgroupSize::shuffle_lanes`]); 1:
    /// the shared-memory tree throughout.
    pub shuffle: i64,
}

impl RowParams {
    /// The stated rule for `rows` rows of `n` on `limits`, with why: `lanes` the power of
    /// two nearest above `n / MAX_KEPT` — the fewest threads a row that still keep it in
    /// registers, so that the trees are shallow: each of their halving steps is a
    /// barrier, which costs far more than the loads and adds of a few more elements a
    /// thread (at most the block's thread limit and 1024) — and as many rows per block as
    /// fill [`BLOCK_THREADS`] (never more than there are rows); where that leaves a block
    /// less than a warp, more lanes; where the rows are too few to give every
    /// multiprocessor a block, twice the lanes (half the rows a block) until they do or a
    /// block holds one row. Measured on the H100 (`h100-2026-11-26f`): GPT-2's layer
    /// norms at 4096 rows of 768 took 12.8 µs with 256 threads a row (3 elements each, 8
    /// halving steps a tree) and 6.3 µs with 64 (12 elements, 6 steps, 4 rows a block);
    /// at 128 rows, 64 threads a row left 100 multiprocessors idle (3.1 → 3.35 µs).
    ///
    /// Split ([`RowParams::parts`]) where the rows are long (at least [`SPLIT_MIN_N`])
    /// and a block per row would launch fewer blocks than the target has
    /// multiprocessors: into the fewest parts that give every multiprocessor a block
    /// (`rows · parts` at least their count and under twice it: one or two waves of
    /// these large blocks), no chunk under [`MIN_PART`] and at most [`MAX_PARTS`];
    /// `lanes` then by the same rule for a chunk.
    pub fn rule(limits: &TargetLimits, rows: i64, n: i64) -> (RowParams, String) {
        let cap = (limits.max_threads_per_block.min(1024) as i64)
            .min(limits.max_block_dim[0] as i64)
            .max(1);
        let sms = (limits.multiprocessors as i64).max(1);
        let per_block = |lanes: i64| {
            (BLOCK_THREADS.min(cap) / lanes)
                .max(1)
                .min(pow2_at_least(rows.max(1)))
                .min(limits.max_block_dim[1] as i64)
                .max(1)
        };
        let mut lanes = pow2_at_least(ceil_div(n.max(1), MAX_KEPT)).min(pow2_at_most(cap));
        // Too few rows to give every multiprocessor a block: more threads a row.
        while ceil_div(rows.max(1), per_block(lanes)) < sms && per_block(lanes) > 1 {
            lanes *= 2;
        }
        let rows_per_block = per_block(lanes);
        // At least a warp a block: a launch of one thread would be no launch at all.
        let lanes = lanes.max((32 / rows_per_block).min(pow2_at_most(cap)));
        let blocks = ceil_div(rows.max(1), rows_per_block);
        if rows_per_block == 1 && n >= SPLIT_MIN_N && blocks < sms {
            let parts = ceil_div(sms, rows.max(1)).min(n / MIN_PART).min(MAX_PARTS);
            if parts >= 2 {
                let chunk = ceil_div(n, parts);
                let lanes = pow2_at_least(ceil_div(chunk, PER_THREAD))
                    .min(pow2_at_most(cap))
                    .max(32.min(pow2_at_most(cap)));
                let p = RowParams {
                    lanes,
                    rows_per_block: 1,
                    parts,
                    shuffle: shuffle_lanes(limits, lanes, lanes),
                };
                let of = if rows == 1 { "row" } else { "rows" };
                return (
                    p,
                    format!(
                        "rule: a block per row, split in {parts} parts (two kernels) for {rows} {of} of {n}"
                    ),
                );
            }
        }
        let p = RowParams {
            lanes,
            rows_per_block,
            parts: 1,
            shuffle: shuffle_lanes(limits, lanes, lanes * rows_per_block),
        };
        let what = if lanes >= 32 && rows_per_block == 1 {
            "a block per row".to_string()
        } else if lanes >= 32 {
            format!("{rows_per_block} rows per block")
        } else {
            format!("{rows_per_block} rows per block, {lanes} threads each")
        };
        (p, format!("rule: {what} for {rows} rows of {n}"))
    }

    /// Threads per block.
    pub fn threads(&self) -> i64 {
        self.lanes * self.rows_per_block
    }
}

/// The lanes a tree over `lanes` threads of a block of `threads` shuffles across on
/// `limits` (1: none).
pub fn shuffle_lanes(limits: &TargetLimits, lanes: i64, threads: i64) -> i64 {
    limits
        .subgroup
        .map(|s| s.shuffle_lanes(lanes.max(1) as u64, threads.max(1) as u64) as i64)
        .unwrap_or(1)
}

/// The least power of two at or above `v`.
pub(super) fn pow2_at_least(v: i64) -> i64 {
    let mut p = 1;
    while p < v {
        p *= 2;
    }
    p
}

fn pow2_at_most(v: i64) -> i64 {
    let mut p = 1;
    while p * 2 <= v {
        p *= 2;
    }
    p
}

/// `op` over the rows of `x` (`[rows, n]`, a parameter or a te view) into `y`
/// (`[rows, n]`, or `[rows]` for the per-row ops; f32), with `p`: one kernel, or two
/// where `p.parts` splits the rows (then `p.rows_per_block` must be 1).
pub fn template_over(
    name: &str,
    x: &Buffer,
    y: &Buffer,
    op: RowOp,
    p: &RowParams,
) -> Result<Func, TemplateError> {
    let invalid = |what: String| TemplateError::Invalid {
        template: name.to_string(),
        what,
    };
    if !(1..=MAX_PARTS).contains(&p.parts) {
        return Err(invalid(format!(
            "rows split in {} parts; 1 to {MAX_PARTS} are possible",
            p.parts
        )));
    }
    if p.shuffle < 1 || p.shuffle > p.lanes || p.shuffle & (p.shuffle - 1) != 0 {
        return Err(invalid(format!(
            "shuffles across {} lanes of {}; a power of two up to the lanes is possible",
            p.shuffle, p.lanes
        )));
    }
    if p.parts > 1 && p.rows_per_block != 1 {
        return Err(invalid(format!(
            "rows split in {} parts with {} rows per block; a split row's chunk takes a block of its own",
            p.parts, p.rows_per_block
        )));
    }
    let mut t = Template::new(name);
    t.param(x);
    t.param(y);
    if p.parts > 1 {
        split::add_kernels(&mut t, x, y, op, p);
    } else {
        add_kernel(&mut t, x, y, op, p);
    }
    t.finish()
}

/// Adds the one-kernel form of [`template_over`] to `t`, whose buffers `x` and `y`
/// already are (`p.parts` is not read: [`template_over`] takes the split form).
pub fn add_kernel(t: &mut Template, x: &Buffer, y: &Buffer, op: RowOp, p: &RowParams) {
    let (rows, n) = (x.shape()[0], x.shape()[1]);
    let RowParams {
        lanes,
        rows_per_block: rpb,
        ..
    } = *p;
    let blocks = ceil_div(rows, rpb);
    let grid = grid_for(blocks);
    let per = ceil_div(n, lanes);
    let keep = per <= MAX_KEPT;
    let ragged = n % lanes != 0;
    let inv_n = (1.0 / n as f64) as f32;
    t.kernel(grid, [lanes, rpb, 1], |kb| {
        let tx = kb.thread_x();
        let ty = if rpb > 1 { kb.thread_y() } else { Expr::int(0) };
        let pid = block_index(kb, grid);
        let row = if rpb > 1 {
            kb.let_("row", pid.clone() * rpb + ty.clone())
        } else {
            pid.clone()
        };
        // Rows past the end (a last block not full, a two-dimensional grid's surplus)
        // take part in the barriers but load and store nothing.
        let live = if blocks * rpb > rows || grid[0] * grid[1] > blocks {
            Some(row.clone().lt(rows))
        } else {
            None
        };
        // Element `e` of the thread's part of the row: its column and whether it exists.
        let col = |e: &Expr| e.clone() * lanes + tx.clone();
        let valid = |e: &Expr| -> Option<Expr> {
            let inside = ragged.then(|| col(e).lt(n));
            match (&live, inside) {
                (Some(l), Some(i)) => Some(l.clone().and(i)),
                (Some(l), None) => Some(l.clone()),
                (None, i) => i,
            }
        };
        let read = |e: &Expr, fallback: f32| -> Expr {
            let at = [row.clone(), col(e)];
            let v = match valid(e) {
                Some(c) => load_or(x, at, c, constant(fallback, x.dtype())),
                None => x.load(at.to_vec()),
            };
            if x.dtype() == DType::F32 {
                v
            } else {
                te::cast(v, DType::F32)
            }
        };
        let kept = keep.then(|| kb.local("xs", &[per], DType::F32));
        let acc = kb.local("acc", &[1], DType::F32);
        let zero = Expr::f32(0.0);
        // One pass over the thread's elements: `body` gets each one's index and value
        // (the kept copy, or a fresh read with `fallback` outside the row).
        let pass = |kb: &mut KernelBuilder,
                    fallback: f32,
                    body: &dyn Fn(&mut KernelBuilder, Expr, Expr)| {
            let each = |kb: &mut KernelBuilder, e: Expr| {
                let v = match &kept {
                    Some(xs) => xs.at(std::slice::from_ref(&e)),
                    None => read(&e, fallback),
                };
                body(kb, e, v);
            };
            if keep {
                kb.unroll("e", per, each);
            } else {
                kb.serial("e", per, each);
            }
        };
        // `acc op= value` where element `e` exists.
        let accumulate = |kb: &mut KernelBuilder, e: &Expr, combined: Expr| match valid(e) {
            Some(c) => kb.if_(c, |kb| kb.store(&acc, [0], combined)),
            None => kb.store(&acc, [0], combined),
        };
        // The first pass reads the row (into registers where kept).
        // `squares`: the sum of the values' squares (the RMS norm's), not of the values.
        let first = |kb: &mut KernelBuilder, reduce: ReduceOp, squares: bool| {
            kb.store(&acc, [0], reduce.identity(DType::F32));
            let fallback = match reduce {
                ReduceOp::Sum => 0.0,
                ReduceOp::Max => f32::MIN,
                ReduceOp::Min => f32::MAX,
            };
            let each = |kb: &mut KernelBuilder, e: Expr| {
                let v = read(&e, fallback);
                let v = match &kept {
                    Some(xs) => {
                        kb.store(xs, [e.clone()], v);
                        xs.at(std::slice::from_ref(&e))
                    }
                    None => v,
                };
                let v = if squares { v.clone() * v } else { v };
                accumulate(kb, &e, reduce.combine(acc.at(&[0]), v));
            };
            if keep {
                kb.unroll("e", per, each);
            } else {
                kb.serial("e", per, each);
            }
        };
        let combine_row = |kb: &mut KernelBuilder, name: &str, reduce: ReduceOp| -> Expr {
            tree(
                kb,
                name,
                reduce,
                acc.at(&[0]),
                &tx,
                &ty,
                lanes,
                rpb,
                p.shuffle,
            )
        };
        let store_row = |kb: &mut KernelBuilder, e: &Expr, v: Expr| {
            let at = [row.clone(), col(e)];
            match valid(e) {
                Some(c) => kb.store_if(c, y, at, v),
                None => kb.store(y, at, v),
            }
        };
        match op {
            RowOp::Softmax => {
                first(kb, ReduceOp::Max, false);
                let max = combine_row(kb, "row_max", ReduceOp::Max);
                kb.store(&acc, [0], zero.clone());
                pass(kb, f32::MIN, &|kb, e, v| {
                    let ex = te::exp(v - max.clone());
                    let ex = match &kept {
                        Some(xs) => {
                            kb.store(xs, [e.clone()], ex);
                            xs.at(std::slice::from_ref(&e))
                        }
                        None => ex,
                    };
                    accumulate(kb, &e, acc.at(&[0]) + ex);
                });
                let sum = combine_row(kb, "row_sum", ReduceOp::Sum);
                let inv = kb.let_("inv_sum", Expr::f32(1.0) / sum);
                pass(kb, f32::MIN, &|kb, e, v| {
                    let ex = if keep { v } else { te::exp(v - max.clone()) };
                    store_row(kb, &e, ex * inv.clone());
                });
            }
            RowOp::LayerNorm { epsilon } => {
                first(kb, ReduceOp::Sum, false);
                let mean = combine_row(kb, "row_sum", ReduceOp::Sum);
                let mean = kb.let_("mean", mean * inv_n);
                kb.store(&acc, [0], zero.clone());
                pass(kb, 0.0, &|kb, e, v| {
                    let d = kb.let_("d", v - mean.clone());
                    accumulate(kb, &e, acc.at(&[0]) + d.clone() * d);
                });
                let var = combine_row(kb, "row_sq", ReduceOp::Sum);
                let k = kb.let_("rstd", te::rsqrt(var * inv_n + epsilon));
                pass(kb, 0.0, &|kb, e, v| {
                    store_row(kb, &e, (v - mean.clone()) * k.clone());
                });
            }
            RowOp::RmsNorm { epsilon } => {
                first(kb, ReduceOp::Sum, true);
                let sq = combine_row(kb, "row_sq", ReduceOp::Sum);
                let k = kb.let_("rrms", te::rsqrt(sq * inv_n + epsilon));
                pass(kb, 0.0, &|kb, e, v| {
                    store_row(kb, &e, v * k.clone());
                });
            }
            RowOp::Sum | RowOp::Mean | RowOp::Max | RowOp::Min => {
                let reduce = match op {
                    RowOp::Max => ReduceOp::Max,
                    RowOp::Min => ReduceOp::Min,
                    _ => ReduceOp::Sum,
                };
                first(kb, reduce, false);
                let total = combine_row(kb, "row_total", reduce);
                let total = if op == RowOp::Mean {
                    total * inv_n
                } else {
                    total
                };
                let first_lane = tx.clone().lt(1);
                let cond = match &live {
                    Some(l) => first_lane.and(l.clone()),
                    None => first_lane,
                };
                kb.store_if(cond, y, [row.clone()], total);
            }
        }
    });
}

/// `v` as a constant of `dtype` (a loaded element's fallback).
pub(super) fn constant(v: f32, dtype: DType) -> Expr {
    match dtype {
        DType::F32 => Expr::f32(v),
        DType::F16 => Expr::Float(v.clamp(-65504.0, 65504.0) as f64, DType::F16),
        d => te::cast(Expr::f32(v), d),
    }
}

/// Combines each thread's `partial` over the `lanes` threads of its row; the row's
/// total, which every thread of the row holds. With `shuffle` lanes of a subgroup
/// (a power of two, at most `lanes`): butterfly shuffles across each run of `shuffle`
/// lanes; where the row is wider, each run's first lane stores its partial, one
/// barrier, and every lane combines the runs' partials (by shuffles again where they
/// fit a run, else reading each in turn). With `shuffle` 1: into shared memory, then
/// halving steps behind barriers.
#[allow(clippy::too_many_arguments)] // the kernel's coordinates, passed as they are
pub(super) fn tree(
    kb: &mut KernelBuilder,
    name: &str,
    reduce: ReduceOp,
    partial: Expr,
    tx: &Expr,
    ty: &Expr,
    lanes: i64,
    rows_per_block: i64,
    shuffle: i64,
) -> Expr {
    if lanes == 1 {
        return kb.let_(name, partial);
    }
    if shuffle > 1 {
        return shuffle_tree(
            kb,
            name,
            reduce,
            partial,
            tx,
            ty,
            lanes,
            rows_per_block,
            shuffle,
        );
    }
    // One array per tree: the next tree's first stores cannot overwrite this total
    // before every thread has read it.
    let sh = kb.shared(name, &[rows_per_block, lanes], DType::F32);
    kb.store(&sh, [ty.clone(), tx.clone()], partial);
    kb.barrier();
    let mut half = lanes / 2;
    while half >= 1 {
        let (here, there) = ([ty.clone(), tx.clone()], [ty.clone(), tx.clone() + half]);
        let combined = reduce.combine(sh.at(&here), sh.at(&there));
        kb.if_(tx.clone().lt(half), |kb| kb.store(&sh, here, combined));
        kb.barrier();
        half /= 2;
    }
    kb.let_(name, sh.at(&[ty.clone(), Expr::int(0)]))
}

/// `v` combined by `reduce` over each aligned run of `width` lanes (a power of two
/// within a subgroup) by butterfly shuffles; every lane of the run holds the result.
/// Each step is a `let` where it is written, which must be where every thread arrives: a
/// shuffle is a collective, and naga, Tint and CUDA's `__shfl_xor_sync` all hold it
/// there. Shared by the row trees and attention's row statistics.
pub(crate) fn butterfly(
    kb: &mut KernelBuilder,
    name: &str,
    reduce: ReduceOp,
    v: Expr,
    width: i64,
) -> Expr {
    let mut v = kb.let_(name, v);
    let mut mask = width / 2;
    while mask >= 1 {
        v = kb.let_(name, reduce.combine(v.clone(), Expr::shuffle_xor(v, mask)));
        mask /= 2;
    }
    v
}

/// [`tree`] by subgroup shuffles (`shuffle` > 1).
#[allow(clippy::too_many_arguments)]
fn shuffle_tree(
    kb: &mut KernelBuilder,
    name: &str,
    reduce: ReduceOp,
    partial: Expr,
    tx: &Expr,
    ty: &Expr,
    lanes: i64,
    rows_per_block: i64,
    shuffle: i64,
) -> Expr {
    let run = butterfly(kb, name, reduce, partial, shuffle);
    if shuffle >= lanes {
        return run;
    }
    // The runs' partials: one a run, through shared memory.
    let runs = lanes / shuffle;
    let sh = kb.shared(name, &[rows_per_block, runs], DType::F32);
    let first = (tx.clone() % shuffle).lt(1);
    kb.store_if(first, &sh, [ty.clone(), tx.clone() / shuffle], run);
    kb.barrier();
    if runs <= shuffle {
        // Lane `tx` takes run `tx % runs`'s partial: each aligned run of `runs` lanes
        // holds them all, and shuffles within it.
        let mine = sh.at(&[ty.clone(), tx.clone() % runs]);
        return butterfly(kb, name, reduce, mine, runs);
    }
    // Read in turn, combined pairwise: a sum of many partials keeps the rounding of a
    // tree (about log2(runs) roundings a value, not `runs`: a layer norm's mean of values
    // near 1000 over a chunk of 5000 lost 1e-4 of its output to a running sum).
    fn pairwise(reduce: ReduceOp, sh: &Buffer, ty: &Expr, lo: i64, hi: i64) -> Expr {
        if hi - lo == 1 {
            return sh.at(&[ty.clone(), Expr::int(lo)]);
        }
        let mid = lo + (hi - lo) / 2;
        reduce.combine(
            pairwise(reduce, sh, ty, lo, mid),
            pairwise(reduce, sh, ty, mid, hi),
        )
    }
    let total = pairwise(reduce, &sh, ty, 0, runs);
    kb.let_(name, total)
}

/// A one-line description of `op` with `p` over rows of `n`.
pub fn describe(op: RowOp, p: &RowParams, n: i64) -> String {
    let chunk = ceil_div(n.max(1), p.parts.max(1));
    let per = ceil_div(chunk, p.lanes);
    let kept = if per <= MAX_KEPT {
        "in registers"
    } else {
        "read again each pass"
    };
    let trees = if p.shuffle > 1 {
        format!(", trees by shuffles across {} lanes", p.shuffle)
    } else {
        ", trees in shared memory".to_string()
    };
    if p.parts > 1 {
        return format!(
            "{} template: rows split in {} parts (two kernels), {} threads per part, {per} element(s) a thread {kept}{trees}",
            op.name(),
            p.parts,
            p.lanes,
        );
    }
    format!(
        "{} template: {} threads per row, {} row(s) per block, {per} element(s) a thread {kept}{trees}",
        op.name(),
        p.lanes,
        p.rows_per_block,
    )
}
