//! Region inference: which part of a buffer a set of accesses touches, as a symbolic
//! start plus a constant extent per dimension.
//!
//! Used by `compute_at`/`reverse_compute_at` (how many iterations the moved block needs)
//! and by lowering (how small a shared or local allocation can be). An index is split into
//! a *fixed* part, over variables that are constant where the region is used (outer loops,
//! block indices), and a *relaxed* part over variables that sweep (inner loops, and thread
//! indices when threads share the buffer). The relaxed part's interval gives the extent.

use crate::arith::gcd;
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

/// One dimension of a region: the indices `start + stride * k` for `k` in `0..extent`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DimRegion {
    pub start: Expr,
    pub extent: i64,
    pub stride: i64,
}

/// One access of one dimension: the index is `fixed + rel + constant`, where `rel` (over
/// relaxed variables, no constant) lies in `lo..=hi`.
struct DimAccess {
    fixed: Affine,
    rel: Affine,
    constant: i64,
    lo: i64,
    hi: i64,
}

fn dim_access(index: &Expr, relaxed: &Bounds, facts: &[UpperFact]) -> Option<DimAccess> {
    let a = Affine::from_expr(&simplify(index));
    let mut fixed = Affine::default();
    let mut rel = Affine::default();
    for (atom, c) in &a.terms {
        match classify(atom, relaxed)? {
            true => rel.add_term(atom.clone(), *c),
            false => fixed.add_term(atom.clone(), *c),
        }
    }
    let (lo, mut hi) = bound(&rel.to_expr(), relaxed)?;
    for (fa, c) in facts {
        if fa.minus(&rel).as_const() == Some(0) {
            hi = hi.min(c - 1);
        }
    }
    Some(DimAccess {
        fixed,
        rel,
        constant: a.constant,
        lo,
        hi,
    })
}

/// The union of `accesses` over a buffer of `shape`: per dimension a start expression, an
/// extent and a stride. Accesses that touch only every `g`-th element (`i_2 * 16 + t`
/// with `i_2` relaxed) get stride `g`, so a strided per-thread tile stays small. A
/// dimension the analysis cannot bound covers the whole buffer dimension.
pub(crate) fn union_region(accesses: &[Access], shape: &[i64], relaxed: &Bounds) -> Vec<DimRegion> {
    (0..shape.len())
        .map(|d| {
            let full = DimRegion {
                start: Expr::int(0),
                extent: shape[d],
                stride: 1,
            };
            let mut dims: Vec<DimAccess> = Vec::new();
            for a in accesses {
                let Some(idx) = a.indices.get(d) else {
                    return full.clone();
                };
                let Some(da) = dim_access(idx, relaxed, &a.facts) else {
                    return full.clone();
                };
                if let Some(first) = dims.first()
                    && da.fixed.minus(&first.fixed).as_const() != Some(0)
                {
                    return full.clone();
                }
                dims.push(da);
            }
            let Some(first) = dims.first() else {
                return full;
            };
            let mut g = 0;
            for da in &dims {
                g = da.rel.terms.iter().fold(g, |g, (_, c)| gcd(g, *c));
                g = gcd(g, da.constant - first.constant);
            }
            let g = g.max(1);
            let lo = dims.iter().map(|x| x.constant + x.lo).min().unwrap_or(0);
            let hi = dims.iter().map(|x| x.constant + x.hi).max().unwrap_or(0);
            if hi < lo {
                return full;
            }
            // The region may reach past the buffer (a partial tile): users of the region
            // guard those indices with predicates rather than widen it to the buffer.
            let extent = (hi - lo) / g + 1;
            let mut start = first.fixed.clone();
            start.constant += lo;
            DimRegion {
                start: simplify(&start.to_expr()),
                extent,
                stride: g,
            }
        })
        .collect()
}
