//! The split form of the row reduction, for rows so long and so few that a block per
//! row would leave most of the GPU idle ([`RowParams::rule`] says when). Each row is
//! cut into `parts` contiguous chunks of `ceil(n / parts)` elements (the last ones
//! shorter, or empty, where `parts` does not divide `n`), and two kernels run:
//!
//! 1. One block per (row, chunk) reduces its chunk to a partial state in a global
//!    temporary `partials[rows, parts, k]` (f32), by the one-kernel form's passes and
//!    trees (its elements in registers where they are few enough, [`MAX_KEPT`]):
//!    - softmax: the chunk's max `m` and `s = Σ exp(x − m)` (k = 2);
//!    - layer norm: the chunk's count, mean and `M2 = Σ (x − mean)²` (k = 3), the mean
//!      first and then `M2` about it, so no large sums are subtracted;
//!    - sum and mean: the chunk's sum; max and min: its extreme (k = 1).
//! 2. Softmax and layer norm: one block per (row, chunk) again. Every thread combines all
//!    of its row's partials (at most [`MAX_PARTS`], the same few addresses for the whole
//!    block, so they come from cache and need no barrier), then writes its chunk's
//!    `exp(x − max) / sum` or `(x − mean) · rsqrt(var + ε)`. The per-row ops: one thread
//!    per row combines the row's parts into `y[row]`.
//!
//! Softmax partials combine as `max = maxᵢ mᵢ`, `sum = Σᵢ sᵢ · exp(mᵢ − max)`; layer norm
//! ones by Chan, Golub and LeVeque's parallel formula: `(nₐ, meanₐ, M2ₐ)` and
//! `(n_b, mean_b, M2_b)` make `n = nₐ + n_b`, `δ = mean_b − meanₐ`,
//! `mean = meanₐ + δ · n_b / n`, `M2 = M2ₐ + M2_b + δ² · nₐ · n_b / n`. Unlike a sum and a
//! sum of squares, it keeps the variance's digits where the mean is large against the
//! spread (`1000 + noise`). An empty chunk's state (max `f32::MIN` and sum 0; count 0) is
//! the identity of its combination, so it changes nothing.
//!
//! As in the one-kernel form, `x` may be a te view, inlined into both kernels' loads
//! (kernel 2 reads the row again, its producers recomputed), and the caller fuses its
//! epilogue into the stores of `y`, which only the second kernel makes.

use weft_ir::expr::ReduceOp;
use weft_ir::prelude::*;
use weft_ir::template::{KernelBuilder, Template, load_or};

use super::{BLOCK_THREADS, MAX_KEPT, MAX_PARTS, RowOp, RowParams, constant, pow2_at_least, tree};
use crate::{block_index, ceil_div, grid_for, per_item};

/// How the split kernels cover the rows: a block of `lanes` threads per (row, chunk).
struct Layout {
    n: i64,
    parts: i64,
    lanes: i64,
    /// Lanes the trees shuffle across ([`RowParams::shuffle`]).
    shuffle: i64,
    /// Elements of each chunk (the last ones may hold fewer, or none).
    chunk: i64,
    /// Elements of its chunk each thread walks.
    per: i64,
    /// Whether each thread keeps its elements in registers between kernel 1's passes.
    keep: bool,
    blocks: i64,
    grid: [i64; 2],
}

/// One thread's place in a [`Layout`]'s grid.
struct Place {
    tx: Expr,
    row: Expr,
    part: Expr,
    /// The chunk's first column.
    start: Expr,
    /// Whether the block covers a chunk (the surplus of a two-dimensional grid does not);
    /// `None` where every block does.
    live: Option<Expr>,
}

impl Layout {
    fn new(rows: i64, n: i64, p: &RowParams) -> Layout {
        let chunk = ceil_div(n, p.parts);
        let per = ceil_div(chunk, p.lanes);
        let blocks = rows * p.parts;
        Layout {
            n,
            parts: p.parts,
            lanes: p.lanes,
            shuffle: p.shuffle,
            chunk,
            per,
            keep: per <= MAX_KEPT,
            blocks,
            grid: grid_for(blocks),
        }
    }

    fn place(&self, kb: &mut KernelBuilder) -> Place {
        let tx = kb.thread_x();
        let pid = block_index(kb, self.grid);
        let row = kb.let_("row", pid.clone() / self.parts);
        let part = kb.let_("part", pid.clone() % self.parts);
        let start = kb.let_("start", part.clone() * self.chunk);
        let live = (self.grid[0] * self.grid[1] > self.blocks).then(|| pid.lt(self.blocks));
        Place {
            tx,
            row,
            part,
            start,
            live,
        }
    }

    /// The column of the thread's element `e`.
    fn col(&self, at: &Place, e: &Expr) -> Expr {
        at.start.clone() + self.offset(at, e)
    }

    /// The place of the thread's element `e` in its chunk.
    fn offset(&self, at: &Place, e: &Expr) -> Expr {
        e.clone() * self.lanes + at.tx.clone()
    }

    /// Whether the thread's element `e` exists: inside the chunk (where the threads
    /// overrun it), inside the row (where the last chunks are short) and in a live
    /// block; `None` where it always does.
    fn valid(&self, at: &Place, e: &Expr) -> Option<Expr> {
        let in_chunk = (self.chunk % self.lanes != 0).then(|| self.offset(at, e).lt(self.chunk));
        let in_row = (self.chunk * self.parts != self.n).then(|| self.col(at, e).lt(self.n));
        [at.live.clone(), in_chunk, in_row]
            .into_iter()
            .flatten()
            .reduce(|a, b| a.and(b))
    }

    /// Element `e` of the thread's part of `x` in f32 (`fallback` where it does not
    /// exist).
    fn read(&self, x: &Buffer, at: &Place, e: &Expr, fallback: f32) -> Expr {
        let index = [at.row.clone(), self.col(at, e)];
        let v = match self.valid(at, e) {
            Some(c) => load_or(x, index, c, constant(fallback, x.dtype())),
            None => x.load(index.to_vec()),
        };
        if x.dtype() == DType::F32 {
            v
        } else {
            te::cast(v, DType::F32)
        }
    }

    /// A loop over the thread's elements: unrolled where they are kept in registers.
    fn each(&self, kb: &mut KernelBuilder, body: impl FnOnce(&mut KernelBuilder, Expr)) {
        if self.keep {
            kb.unroll("e", self.per, body);
        } else {
            kb.serial("e", self.per, body);
        }
    }
}

/// The f32 values of a chunk's partial state.
fn state_width(op: RowOp) -> i64 {
    match op {
        RowOp::Softmax => 2,
        RowOp::LayerNorm { .. } => 3,
        RowOp::RmsNorm { .. } => 1,
        RowOp::Sum | RowOp::Mean | RowOp::Max | RowOp::Min => 1,
    }
}

/// The reduction of a per-row op (sum for the mean too).
fn per_row_reduce(op: RowOp) -> ReduceOp {
    match op {
        RowOp::Max => ReduceOp::Max,
        RowOp::Min => ReduceOp::Min,
        _ => ReduceOp::Sum,
    }
}

/// Adds the two kernels of the split form of `op` over `x` into `y` to `t`, whose
/// buffers `x` and `y` already are, with a global temporary for the partials.
/// `p.parts` is at least 2 and `p.rows_per_block` 1 (checked by the caller).
pub(super) fn add_kernels(t: &mut Template, x: &Buffer, y: &Buffer, op: RowOp, p: &RowParams) {
    debug_assert!(p.parts >= 2 && p.parts <= MAX_PARTS && p.rows_per_block == 1);
    let (rows, n) = (x.shape()[0], x.shape()[1]);
    let l = Layout::new(rows, n, p);
    let partials = t.temp(
        "row_partials",
        &[rows, l.parts, state_width(op)],
        DType::F32,
    );
    add_partials(t, x, &partials, op, &l);
    if op.per_row() {
        add_combine_rows(t, &partials, y, op, rows, n, l.parts);
    } else {
        add_normalize(t, x, &partials, y, op, &l);
    }
}

/// Kernel 1: each block's chunk reduced to its partial state.
fn add_partials(t: &mut Template, x: &Buffer, partials: &Buffer, op: RowOp, l: &Layout) {
    t.kernel(l.grid, [l.lanes, 1, 1], |kb| {
        let at = l.place(kb);
        let kept = l.keep.then(|| kb.local("xs", &[l.per], DType::F32));
        let acc = kb.local("acc", &[1], DType::F32);
        // One pass: `acc` the `reduce` of `value(x)` over the thread's elements that
        // exist, then over the chunk's threads; the first pass reads the chunk (into
        // registers where kept), the others take the kept copy or read it again.
        let fold = |kb: &mut KernelBuilder,
                    name: &str,
                    reduce: ReduceOp,
                    first: bool,
                    value: &dyn Fn(Expr) -> Expr|
         -> Expr {
            kb.store(&acc, [0], reduce.identity(DType::F32));
            let fallback = match reduce {
                ReduceOp::Sum => 0.0,
                ReduceOp::Max => f32::MIN,
                ReduceOp::Min => f32::MAX,
            };
            l.each(kb, |kb, e| {
                let v = match &kept {
                    Some(xs) if first => {
                        kb.store(xs, [e.clone()], l.read(x, &at, &e, fallback));
                        xs.at(std::slice::from_ref(&e))
                    }
                    Some(xs) => xs.at(std::slice::from_ref(&e)),
                    None => l.read(x, &at, &e, fallback),
                };
                let combined = reduce.combine(acc.at(&[0]), value(v));
                match l.valid(&at, &e) {
                    Some(c) => kb.if_(c, |kb| kb.store(&acc, [0], combined)),
                    None => kb.store(&acc, [0], combined),
                }
            });
            tree(
                kb,
                name,
                reduce,
                acc.at(&[0]),
                &at.tx,
                &Expr::int(0),
                l.lanes,
                1,
                l.shuffle,
            )
        };
        let state: Vec<Expr> = match op {
            RowOp::Softmax => {
                let max = fold(kb, "part_max", ReduceOp::Max, true, &|v| v);
                let sum = fold(kb, "part_sum", ReduceOp::Sum, false, &|v| {
                    te::exp(v - max.clone())
                });
                vec![max, sum]
            }
            RowOp::LayerNorm { .. } => {
                // The chunk's elements that exist: all but in the last chunks.
                let count = (Expr::int(l.n) - at.start.clone()).min(l.chunk).max(0);
                let count = kb.let_("count", te::cast(count, DType::F32));
                let sum = fold(kb, "part_sum", ReduceOp::Sum, true, &|v| v);
                // An empty chunk's mean is 0 (its sum), not 0 / 0.
                let mean = kb.let_("mean", sum / count.clone().max(1.0f32));
                let m2 = fold(kb, "part_m2", ReduceOp::Sum, false, &|v| {
                    let d = v - mean.clone();
                    d.clone() * d
                });
                vec![count, mean, m2]
            }
            RowOp::RmsNorm { .. } => {
                vec![fold(kb, "part_sq", ReduceOp::Sum, true, &|v| v.clone() * v)]
            }
            RowOp::Sum | RowOp::Mean | RowOp::Max | RowOp::Min => {
                vec![fold(kb, "part_total", per_row_reduce(op), true, &|v| v)]
            }
        };
        let first_lane = at.tx.clone().lt(1);
        let cond = match &at.live {
            Some(live) => first_lane.and(live.clone()),
            None => first_lane,
        };
        kb.if_(cond, |kb| {
            for (i, v) in state.into_iter().enumerate() {
                let index = [at.row.clone(), at.part.clone(), Expr::int(i as i64)];
                kb.store(partials, index, v);
            }
        });
    });
}

/// Kernel 2 of the per-row ops: one thread per row combines its parts into `y[row]`.
fn add_combine_rows(
    t: &mut Template,
    partials: &Buffer,
    y: &Buffer,
    op: RowOp,
    rows: i64,
    n: i64,
    parts: i64,
) {
    let reduce = per_row_reduce(op);
    let threads = pow2_at_least(rows).clamp(32, BLOCK_THREADS);
    per_item(t, rows, threads, |kb, row| {
        let acc = kb.local("acc", &[1], DType::F32);
        kb.store(&acc, [0], reduce.identity(DType::F32));
        kb.serial("q", parts, |kb, q| {
            let part = partials.at(&[row.clone(), q, Expr::int(0)]);
            kb.store(&acc, [0], reduce.combine(acc.at(&[0]), part));
        });
        let total = acc.at(&[0]);
        let total = if op == RowOp::Mean {
            total * ((1.0 / n as f64) as f32)
        } else {
            total
        };
        kb.store(y, [row], total);
    });
}

/// Kernel 2 of softmax and layer norm: each block combines its row's partials and
/// writes its chunk.
fn add_normalize(
    t: &mut Template,
    x: &Buffer,
    partials: &Buffer,
    y: &Buffer,
    op: RowOp,
    l: &Layout,
) {
    let inv_n = (1.0 / l.n as f64) as f32;
    t.kernel(l.grid, [l.lanes, 1, 1], |kb| {
        let at = l.place(kb);
        // No barriers here: the surplus blocks of a two-dimensional grid may skip it all.
        let body = |kb: &mut KernelBuilder| {
            let part = |q: &Expr, i: i64| partials.at(&[at.row.clone(), q.clone(), Expr::int(i)]);
            let acc = kb.local("acc", &[3], DType::F32);
            let zero = Expr::f32(0.0);
            // The row's statistics, and what makes an element's output of its value.
            let output: Box<dyn Fn(Expr) -> Expr> = match op {
                RowOp::Softmax => {
                    kb.store(&acc, [0], ReduceOp::Max.identity(DType::F32));
                    kb.serial("q", l.parts, |kb, q| {
                        kb.store(&acc, [0], acc.at(&[0]).max(part(&q, 0)));
                    });
                    let max = kb.let_("row_max", acc.at(&[0]));
                    kb.store(&acc, [1], zero);
                    kb.serial("q", l.parts, |kb, q| {
                        let scaled = part(&q, 1) * te::exp(part(&q, 0) - max.clone());
                        kb.store(&acc, [1], acc.at(&[1]) + scaled);
                    });
                    let inv = kb.let_("inv_sum", Expr::f32(1.0) / acc.at(&[1]));
                    Box::new(move |v| te::exp(v - max.clone()) * inv.clone())
                }
                RowOp::LayerNorm { epsilon } => {
                    for i in 0..3 {
                        kb.store(&acc, [i], zero.clone());
                    }
                    // Chan's merge of the running (count, mean, M2) with part q's.
                    kb.serial("q", l.parts, |kb, q| {
                        let (nb, mb, m2b) = (part(&q, 0), part(&q, 1), part(&q, 2));
                        let na = kb.let_("na", acc.at(&[0]));
                        let total = kb.let_("total", na.clone() + nb.clone());
                        let d = kb.let_("delta", mb - acc.at(&[1]));
                        // n_b / n; two empty states merge to an empty one, not 0 / 0.
                        let w = kb.let_("w", nb / total.clone().max(1.0f32));
                        kb.store(&acc, [1], acc.at(&[1]) + d.clone() * w.clone());
                        kb.store(&acc, [2], acc.at(&[2]) + m2b + d.clone() * d * na * w);
                        kb.store(&acc, [0], total);
                    });
                    let mean = kb.let_("mean", acc.at(&[1]));
                    let rstd = kb.let_("rstd", te::rsqrt(acc.at(&[2]) * inv_n + epsilon));
                    Box::new(move |v| (v - mean.clone()) * rstd.clone())
                }
                RowOp::RmsNorm { epsilon } => {
                    kb.store(&acc, [0], zero);
                    kb.serial("q", l.parts, |kb, q| {
                        kb.store(&acc, [0], acc.at(&[0]) + part(&q, 0));
                    });
                    let k = kb.let_("rrms", te::rsqrt(acc.at(&[0]) * inv_n + epsilon));
                    Box::new(move |v| v * k.clone())
                }
                RowOp::Sum | RowOp::Mean | RowOp::Max | RowOp::Min => {
                    unreachable!("the per-row ops take add_combine_rows")
                }
            };
            l.each(kb, |kb, e| {
                let v = l.read(x, &at, &e, 0.0);
                let index = [at.row.clone(), l.col(&at, &e)];
                match l.valid(&at, &e) {
                    Some(c) => kb.store_if(c, y, index, output(v)),
                    None => kb.store(y, index, output(v)),
                }
            });
        };
        match at.live.clone() {
            Some(live) => kb.if_(live, body),
            None => body(kb),
        }
    });
}
