//! The walk over a kernel's statements that collects every access with the facts that
//! hold at it.

use std::collections::HashMap;

use super::facts::Facts;
use super::{AccessCheck, AccessKind};
use crate::arith::Bounds;
use crate::expr::{BinOp, Buffer, Expr, Scope};
use crate::fragment::{FragLayout, FragOp, FragRef};
use crate::kernel::{KStmt, Kernel};

/// Every distinct access of `kernel` with its proof result, in program order, and the
/// integer divisions not shown safe.
pub(super) fn checks(
    kernel: &Kernel,
    length: &dyn Fn(&Buffer) -> i64,
) -> (Vec<AccessCheck>, Vec<String>) {
    let bounds = Bounds::of_launch(kernel.grid, kernel.block);
    let mut w = Walker {
        out: Vec::new(),
        seen: HashMap::new(),
        length,
        divisions: Vec::new(),
    };
    w.stmt(&kernel.body, &Facts::new(bounds));
    (w.out, w.divisions)
}

struct Walker<'l> {
    out: Vec<AccessCheck>,
    /// Position in `out` of each distinct access.
    seen: HashMap<(u64, AccessKind, String, i64), usize>,
    /// Elements of each buffer.
    length: &'l dyn Fn(&Buffer) -> i64,
    /// Integer divisions whose divisor is not shown to be neither 0 nor −1.
    divisions: Vec<String>,
}

impl Walker<'_> {
    fn stmt(&mut self, s: &KStmt, facts: &Facts) {
        match s {
            KStmt::Seq(items) => items.iter().for_each(|i| self.stmt(i, facts)),
            KStmt::For {
                var, extent, body, ..
            } => {
                let mut f = facts.clone();
                f.enter_loop(var, *extent);
                self.stmt(body, &f);
            }
            KStmt::If {
                cond,
                then,
                otherwise,
            } => {
                self.expr(cond, facts);
                let mut f = facts.clone();
                f.assume(cond);
                self.stmt(then, &f);
                if let Some(o) = otherwise {
                    let mut f = facts.clone();
                    f.assume_not(cond);
                    self.stmt(o, &f);
                }
            }
            KStmt::Let { var, value, body } => {
                self.expr(value, facts);
                let mut f = facts.clone();
                f.enter_let(var, value);
                self.stmt(body, &f);
            }
            KStmt::Store {
                buffer,
                index,
                value,
                lanes,
            } => {
                self.expr(index, facts);
                self.expr(value, facts);
                self.check(buffer, AccessKind::Store, index, *lanes as i64, facts);
            }
            KStmt::Frag(op) => self.frag(op, facts),
            KStmt::Mapping(m) => {
                self.expr(&m.worker, facts);
                self.stmt(&m.body, facts);
            }
            KStmt::AtomicAdd(a) => {
                a.exprs().for_each(|e| self.expr(e, facts));
                // The counter's element and the old value's slot: each one flat index.
                for (buffer, kind, index) in atomic_accesses(a) {
                    self.check(buffer, kind, index, 1, facts);
                }
            }
            KStmt::Prefetch {
                buffer,
                index,
                bytes,
            } => {
                self.expr(index, facts);
                // A bulk prefetch reads its bytes from `index` on: all inside the buffer.
                let elems = (*bytes as usize / buffer.dtype().bytes().max(1)).max(1);
                self.check(buffer, AccessKind::Prefetch, index, elems as i64, facts);
            }
            KStmt::Barrier | KStmt::Comment(_) | KStmt::Fence | KStmt::Grid(_) => {}
        }
    }

    /// The loads of `e`, each under the guards of the selects and short circuits above
    /// it (the untaken branch of `select` and the right side of a failed `&&` never run).
    fn expr(&mut self, e: &Expr, facts: &Facts) {
        match e {
            Expr::Load {
                buffer,
                indices,
                lanes,
            } => {
                for i in indices {
                    self.expr(i, facts);
                }
                if let [index] = indices.as_slice() {
                    self.check(buffer, AccessKind::Load, index, *lanes as i64, facts);
                }
            }
            Expr::Select(c, t, f) => {
                self.expr(c, facts);
                let mut yes = facts.clone();
                yes.assume(c);
                self.expr(t, &yes);
                let mut no = facts.clone();
                no.assume_not(c);
                self.expr(f, &no);
            }
            Expr::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                self.expr(a, facts);
                let mut after = facts.clone();
                if *op == BinOp::And {
                    after.assume(a);
                } else {
                    after.assume_not(a);
                }
                self.expr(b, &after);
            }
            Expr::Binary(op, a, b) => {
                self.expr(a, facts);
                self.expr(b, facts);
                let division = matches!(
                    op,
                    BinOp::Div | BinOp::Mod | BinOp::FloorDiv | BinOp::FloorMod
                );
                // Neither 0 nor −1 (i32::MIN / −1 overflows): wgpu may then drop its
                // guarded division.
                let safe = |(lo, hi): (i64, i64)| lo > 0 || hi < -1;
                if division && e.dtype().is_int() && !facts.interval(b).is_some_and(safe) {
                    let text = crate::printer::expr_to_string(e);
                    if !self.divisions.contains(&text) {
                        self.divisions.push(text);
                    }
                }
            }
            Expr::Unary(_, a) | Expr::Cast(_, a) => self.expr(a, facts),
            Expr::Call(_, args) => args.iter().for_each(|a| self.expr(a, facts)),
            Expr::Reduce(r) => self.expr(&r.source, facts),
            Expr::Int(..) | Expr::Float(..) | Expr::Bool(_) | Expr::Var(_) | Expr::Builtin(_) => {}
        }
    }

    fn frag(&mut self, op: &FragOp, facts: &Facts) {
        if let FragOp::Map {
            dst,
            row,
            col,
            value,
            ..
        } = op
        {
            // The value is evaluated at every element: its coordinates range over the
            // tile as loop variables would.
            let (rows, cols) = dst.frag.dims();
            let mut f = facts.clone();
            f.enter_loop(row, rows as i64);
            f.enter_loop(col, cols as i64);
            self.expr(value, &f);
            for r in op.frag_refs() {
                self.expr(&r.index, facts);
                self.check_frag_index(r, facts);
            }
            return;
        }
        for e in op.exprs() {
            self.expr(e, facts);
        }
        for r in op.frag_refs() {
            self.check_frag_index(r, facts);
        }
        if let FragOp::RowReduce { src, tiles, .. } = op
            && *tiles > 1
        {
            // The reduction reads tiles `index .. index + tiles`: the last one too.
            let last = FragRef {
                frag: src.frag.clone(),
                index: src.index.clone() + (*tiles as i64 - 1),
            };
            self.check_frag_index(&last, facts);
        }
        if let Some(bar) = op.mbarrier() {
            let key = (
                bar.bar.id(),
                AccessKind::BarrierIndex,
                crate::printer::expr_to_string(&bar.index),
                1,
            );
            self.record(key, facts, &bar.index, 1, bar.bar.count() as i64, || {
                (bar.bar.name().to_string(), Scope::Shared)
            });
        }
        match op {
            FragOp::WgMma { d, a, b } => {
                let s = d.frag.shape();
                let (m, n, k) = (s.m as i64, s.n as i64, s.k as i64);
                for (t, rows, cols) in [(a, m, k), (b, k, n)] {
                    if let [origin] = t.origin.as_slice() {
                        let span = t.span(rows, cols);
                        self.check(&t.buffer, AccessKind::WgmmaOperand, origin, span, facts);
                    }
                }
                return;
            }
            FragOp::Tma {
                dst, origin, rows, ..
            } => {
                if let [origin] = origin.as_slice() {
                    let span = *rows as i64 * crate::tma::ROW;
                    self.check(dst, AccessKind::TmaBox, origin, span, facts);
                }
                return;
            }
            _ => {}
        }
        let (buffer, origin, stride, frag, kind) = match op {
            FragOp::Load {
                dst,
                buffer,
                origin,
                stride,
            } => (buffer, origin, stride, &dst.frag, AccessKind::FragmentLoad),
            FragOp::Store {
                src,
                buffer,
                origin,
                stride,
            } => (buffer, origin, stride, &src.frag, AccessKind::FragmentStore),
            _ => return,
        };
        let [origin] = origin.as_slice() else {
            return;
        };
        // The last element of the tile: offsets grow with row and column (stride ≥ 0).
        let (rows, cols) = frag.dims();
        let last = match frag.layout() {
            FragLayout::RowMajor => (rows as i64 - 1) * stride + cols as i64 - 1,
            FragLayout::ColMajor => (cols as i64 - 1) * stride + rows as i64 - 1,
        };
        self.check(buffer, kind, origin, last + 1, facts);
    }

    fn check_frag_index(&mut self, r: &FragRef, facts: &Facts) {
        let length = r.frag.count() as i64;
        let key = (
            r.frag.id(),
            AccessKind::FragmentIndex,
            crate::printer::expr_to_string(&r.index),
            1,
        );
        self.record(key, facts, &r.index, 1, length, || {
            (r.frag.name().to_string(), Scope::Local)
        });
    }

    fn check(&mut self, buffer: &Buffer, kind: AccessKind, index: &Expr, span: i64, f: &Facts) {
        let key = (
            buffer.id(),
            kind,
            crate::printer::expr_to_string(index),
            span,
        );
        self.record(key, f, index, span, (self.length)(buffer), || {
            (buffer.name().to_string(), buffer.scope())
        });
    }

    fn record(
        &mut self,
        key: (u64, AccessKind, String, i64),
        facts: &Facts,
        index: &Expr,
        span: i64,
        length: i64,
        name: impl FnOnce() -> (String, Scope),
    ) {
        let lower = facts.nonneg(index);
        // length − span − index ≥ 0, i.e. the last element touched is below `length`.
        let upper = facts.nonneg(&(Expr::int(length - span) - index.clone()));
        let interval = facts.interval(index).map(|(lo, hi)| (lo, hi + span - 1));
        if let Some(&at) = self.seen.get(&key) {
            let c = &mut self.out[at];
            c.occurrences += 1;
            c.lower_proven &= lower;
            c.upper_proven &= upper;
            c.interval = match (c.interval, interval) {
                (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
                _ => None,
            };
            return;
        }
        let (buffer, scope) = name();
        let kind = key.1;
        self.seen.insert(key, self.out.len());
        self.out.push(AccessCheck {
            buffer,
            scope,
            kind,
            index: index.clone(),
            span,
            length,
            interval,
            lower_proven: lower,
            upper_proven: upper,
            occurrences: 1,
        });
    }
}

/// The elements an atomic touches: the counter's (read and written) and where the old
/// value goes (written), each at its one flat index.
fn atomic_accesses(a: &crate::func::AtomicAdd) -> Vec<(&Buffer, AccessKind, &Expr)> {
    let mut out: Vec<_> = a
        .indices
        .iter()
        .map(|i| (&a.buffer, AccessKind::Store, i))
        .collect();
    if let Some((b, idx)) = &a.old {
        out.extend(idx.iter().map(|i| (b, AccessKind::Store, i)));
    }
    out
}
