//! Region inference: which part of a buffer a set of accesses touches, as a symbolic
//! start plus a constant extent per dimension.
//!
//! Used by `compute_at`/`reverse_compute_at` (how many iterations the moved block needs)
//! and by lowering (how small a shared or local allocation can be). An index is split into
//! a *fixed* part, over variables that are constant where the region is used (outer loops,
//! block indices), and a *relaxed* part over variables that sweep (inner loops, and thread
//! indices when threads share the buffer). The relaxed part's interval gives the extent.

use crate::arith::{Affine, Bounds, bound, simplify};
use crate::expr::Expr;

/// A fact `expr < limit` known to hold at an access (from a block predicate or an if).
pub(crate) type UpperFact = (Affine, i64);

/// One access: its indices and the facts that guard it.
pub(crate) struct Access {
    pub indices: Vec<Expr>,
    pub facts: Vec<UpperFact>,
}

/// The facts `a < c` in a conjunction (`a < c`, `a <= c - 1`, `c > a`).
pub(crate) fn upper_facts(pred: &Expr) -> Vec<UpperFact> {
    let mut out = Vec::new();
    fn go(e: &Expr, out: &mut Vec<UpperFact>) {
        use crate::expr::BinOp;
        match e {
            Expr::Binary(BinOp::And, a, b) => {
                go(a, out);
                go(b, out);
            }
            Expr::Binary(op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge), a, b) => {
                let (lhs, rhs, strict) = match op {
                    BinOp::Lt => (a, b, true),
                    BinOp::Le => (a, b, false),
                    BinOp::Gt => (b, a, true),
                    _ => (b, a, false),
                };
                // lhs - rhs_terms < const
                let mut d = Affine::from_expr(lhs).minus(&Affine::from_expr(rhs));
                let c = -d.constant + if strict { 0 } else { 1 };
                d.constant = 0;
                if !d.terms.is_empty() {
                    out.push((d, c));
                }
            }
            _ => {}
        }
    }
    go(pred, &mut out);
    out
}

/// True if the variables and thread indices of `e` are all in `relaxed` (`Some(true)`),
/// none are (`Some(false)`), or some are (`None`).
fn classify(e: &Expr, relaxed: &Bounds) -> Option<bool> {
    let (mut any_r, mut any_f) = (false, false);
    e.visit(&mut |x| match x {
        Expr::Var(v) => {
            if relaxed.get(v).is_some() {
                any_r = true
            } else {
                any_f = true
            }
        }
        Expr::Builtin(a) => {
            if relaxed.axis(*a).is_some() {
                any_r = true
            } else {
                any_f = true
            }
        }
        Expr::Load { .. } => any_f = true,
        _ => {}
    });
    match (any_r, any_f) {
        (true, true) => None,
        (r, _) => Some(r),
    }
}

/// `(fixed part without constant, lo, hi)`: the index lies in `fixed + [lo, hi]`.
fn dim_range(index: &Expr, relaxed: &Bounds, facts: &[UpperFact]) -> Option<(Affine, i64, i64)> {
    let a = Affine::from_expr(&simplify(index));
    let mut fixed = Affine::default();
    let mut rel = Affine::default();
    for (atom, c) in &a.terms {
        match classify(atom, relaxed)? {
            true => rel.add_term(atom.clone(), *c),
            false => fixed.add_term(atom.clone(), *c),
        }
    }
    let (mut lo, mut hi) = bound(&rel.to_expr(), relaxed)?;
    for (fa, c) in facts {
        if fa.minus(&rel).as_const() == Some(0) {
            hi = hi.min(c - 1);
        }
    }
    lo += a.constant;
    hi += a.constant;
    Some((fixed, lo, hi))
}

/// The union of `accesses` over a buffer of `shape`: per dimension a start expression and
/// an extent. A dimension the analysis cannot bound covers the whole buffer dimension.
pub(crate) fn union_region(
    accesses: &[Access],
    shape: &[i64],
    relaxed: &Bounds,
) -> Vec<(Expr, i64)> {
    (0..shape.len())
        .map(|d| {
            let full = (Expr::int(0), shape[d]);
            let mut acc: Option<(Affine, i64, i64)> = None;
            for a in accesses {
                let Some(idx) = a.indices.get(d) else {
                    return full.clone();
                };
                let Some((f, lo, hi)) = dim_range(idx, relaxed, &a.facts) else {
                    return full.clone();
                };
                acc = match acc {
                    None => Some((f, lo, hi)),
                    Some((f0, lo0, hi0)) => match f.minus(&f0).as_const() {
                        Some(0) => Some((f0, lo0.min(lo), hi0.max(hi))),
                        _ => return full.clone(),
                    },
                };
            }
            match acc {
                Some((f, lo, hi)) if hi >= lo && hi - lo < shape[d] => {
                    let mut start = f;
                    start.constant += lo;
                    (simplify(&start.to_expr()), hi - lo + 1)
                }
                _ => full,
            }
        })
        .collect()
}
