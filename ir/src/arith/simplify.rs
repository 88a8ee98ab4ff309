//! The expression simplifier.

use super::gcd;
use super::{Affine, Bounds, bound, floordiv_i64, floormod_i64};
use crate::dtype::DType;
use crate::expr::{BinOp, Expr, UnOp};

/// Simplifies `e` with no knowledge of variable ranges.
pub fn simplify(e: &Expr) -> Expr {
    simplify_with(e, &Bounds::new())
}

/// Simplifies `e` using the ranges in `b`: constant folding, linear canonical form,
/// `(a*c + b) // c → a` and `(a*c + b) % c → b` when `0 ≤ b < c`, `x // c * c + x % c →
/// x`, nested divisions, and comparisons, minima and maxima the bounds decide.
pub fn simplify_with(e: &Expr, b: &Bounds) -> Expr {
    e.rewrite(&mut |n| node(n, b))
}

/// Index arithmetic is `i32`; other integer types are only constant-folded, so that the
/// canonical forms (which build `i32` constants) never change an expression's type.
fn is_int(e: &Expr) -> bool {
    e.dtype() == DType::I32
}

fn canon(e: &Expr, b: &Bounds) -> Expr {
    let mut a = Affine::from_expr(e);
    // An atom known to be a single value is that value (`blockIdx_y` of a 1-block grid).
    let mut k = 0;
    a.terms.retain(|(t, c)| match bound(t, b) {
        Some((lo, hi)) if lo == hi => {
            k += lo * c;
            false
        }
        _ => true,
    });
    a.constant += k;
    recombine(&mut a, b);
    a.to_expr()
}

/// The gcd of `a`'s coefficients and constant, if it divides `c`: then
/// `(g*y) // c = y // (c/g)` and `(g*y) % c = (y % (c/g)) * g`.
fn common_factor(a: &Affine, c: i64) -> Option<(Affine, i64)> {
    let g = a.terms.iter().fold(a.constant, |g, (_, k)| gcd(g, *k));
    if g <= 1 || c % g != 0 {
        return None;
    }
    let mut y = Affine::constant(a.constant / g);
    for (t, k) in &a.terms {
        y.add_term(t.clone(), k / g);
    }
    Some((y, g))
}

/// Replaces `x // c * (k*c) + x % c * k` by `x * k`.
fn recombine(a: &mut Affine, b: &Bounds) {
    loop {
        let mut found = None;
        for (atom, k) in &a.terms {
            if let Expr::Binary(BinOp::FloorMod, x, c) = atom
                && let Some(c) = c.as_int()
            {
                let div = Expr::Binary(BinOp::FloorDiv, x.clone(), Box::new(Expr::int(c)));
                if a.coef(&div) == k * c {
                    found = Some((atom.clone(), div, (**x).clone(), *k));
                    break;
                }
            }
        }
        let Some((m, d, x, k)) = found else { return };
        a.terms.retain(|(t, _)| *t != m && *t != d);
        let xa = Affine::from_expr(&x);
        a.add_scaled(&xa, k);
        let _ = b;
    }
}

/// Splits `a` into `c * q + r` where every term of `q` had a coefficient divisible by `c`.
fn split_multiple(a: &Affine, c: i64) -> (Affine, Affine) {
    let mut q = Affine::default();
    let mut r = Affine::default();
    for (t, k) in &a.terms {
        if k % c == 0 {
            q.add_term(t.clone(), k / c);
        } else {
            r.add_term(t.clone(), *k);
        }
    }
    r.constant = a.constant;
    (q, r)
}

fn floordiv(x: &Expr, c: i64, b: &Bounds) -> Expr {
    if c == 1 {
        return x.clone();
    }
    let (mut q, r) = split_multiple(&Affine::from_expr(x), c);
    let r_expr = r.to_expr();
    if let Some((lo, hi)) = bound(&r_expr, b)
        && floordiv_i64(lo, c) == floordiv_i64(hi, c)
    {
        q.constant += floordiv_i64(lo, c);
        return q.to_expr();
    }
    if let Some((y, g)) = common_factor(&r, c) {
        q.add_term(floordiv(&y.to_expr(), c / g, b), 1);
        return canon(&q.to_expr(), b);
    }
    // floordiv(floordiv(z, d), c) = floordiv(z, d * c) for positive d, c.
    let inner = match &r_expr {
        Expr::Binary(BinOp::FloorDiv, z, d) if d.as_int().is_some_and(|d| d > 0) => {
            floordiv(z, d.as_int().unwrap_or(1) * c, b)
        }
        _ => Expr::Binary(BinOp::FloorDiv, Box::new(r_expr), Box::new(Expr::int(c))),
    };
    q.add_term(inner, 1);
    canon(&q.to_expr(), b)
}

fn floormod(x: &Expr, c: i64, b: &Bounds) -> Expr {
    if c == 1 {
        return Expr::int(0);
    }
    let (_, r) = split_multiple(&Affine::from_expr(x), c);
    let r_expr = r.to_expr();
    if let Some((lo, hi)) = bound(&r_expr, b)
        && floordiv_i64(lo, c) == floordiv_i64(hi, c)
    {
        let mut r2 = r.clone();
        r2.constant -= floordiv_i64(lo, c) * c;
        return r2.to_expr();
    }
    if let Some((y, g)) = common_factor(&r, c) {
        let m = floormod(&y.to_expr(), c / g, b);
        return canon(&(m * Expr::int(g)), b);
    }
    match &r_expr {
        // floormod(floormod(z, d), c) = floormod(z, c) when c divides d.
        Expr::Binary(BinOp::FloorMod, z, d) if d.as_int().is_some_and(|d| d > 0 && d % c == 0) => {
            floormod(z, c, b)
        }
        _ => Expr::Binary(BinOp::FloorMod, Box::new(r_expr), Box::new(Expr::int(c))),
    }
}

fn fold_float(op: BinOp, x: f64, y: f64, d: DType) -> Option<Expr> {
    let v = match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
        BinOp::Lt => return Some(Expr::Bool(x < y)),
        BinOp::Le => return Some(Expr::Bool(x <= y)),
        BinOp::Gt => return Some(Expr::Bool(x > y)),
        BinOp::Ge => return Some(Expr::Bool(x >= y)),
        BinOp::Eq => return Some(Expr::Bool(x == y)),
        BinOp::Ne => return Some(Expr::Bool(x != y)),
        _ => return None,
    };
    let v = match d {
        DType::F16 => half::f16::from_f64(v).to_f64(),
        _ => v as f32 as f64,
    };
    Some(Expr::Float(v, d))
}

fn node(n: Expr, b: &Bounds) -> Expr {
    match &n {
        Expr::Binary(op, x, y) => {
            let op = *op;
            if let (Expr::Float(x, d), Expr::Float(y, _)) = (&**x, &**y) {
                return fold_float(op, *x, *y, *d).unwrap_or(n);
            }
            if let (Expr::Bool(p), Expr::Bool(q)) = (&**x, &**y) {
                return match op {
                    BinOp::And => Expr::Bool(*p && *q),
                    BinOp::Or => Expr::Bool(*p || *q),
                    BinOp::Eq => Expr::Bool(p == q),
                    BinOp::Ne => Expr::Bool(p != q),
                    _ => n,
                };
            }
            match op {
                BinOp::And => match (&**x, &**y) {
                    (Expr::Bool(true), o) | (o, Expr::Bool(true)) => return o.clone(),
                    (Expr::Bool(false), _) | (_, Expr::Bool(false)) => return Expr::Bool(false),
                    _ if x == y => return (**x).clone(),
                    _ => return n,
                },
                BinOp::Or => match (&**x, &**y) {
                    (Expr::Bool(false), o) | (o, Expr::Bool(false)) => return o.clone(),
                    (Expr::Bool(true), _) | (_, Expr::Bool(true)) => return Expr::Bool(true),
                    _ if x == y => return (**x).clone(),
                    _ => return n,
                },
                _ => {}
            }
            if !is_int(x) {
                return n;
            }
            match op {
                BinOp::Add | BinOp::Sub | BinOp::Mul => canon(&n, b),
                BinOp::FloorDiv | BinOp::FloorMod | BinOp::Div | BinOp::Mod => {
                    let Some(c) = y.as_int() else { return n };
                    if c == 0 {
                        return n;
                    }
                    if let Some(xv) = x.as_int() {
                        return Expr::int(match op {
                            BinOp::FloorDiv => floordiv_i64(xv, c),
                            BinOp::FloorMod => floormod_i64(xv, c),
                            BinOp::Div => xv.wrapping_div(c),
                            _ => xv.wrapping_rem(c),
                        });
                    }
                    let truncating = matches!(op, BinOp::Div | BinOp::Mod);
                    let nonneg = bound(x, b).is_some_and(|(lo, _)| lo >= 0);
                    if c < 0 || (truncating && !nonneg) {
                        return n;
                    }
                    let r = if matches!(op, BinOp::FloorDiv | BinOp::Div) {
                        floordiv(x, c, b)
                    } else {
                        floormod(x, c, b)
                    };
                    if truncating {
                        // Keep the C operator the caller chose; the operands are non-negative.
                        r.rewrite(&mut |e| match e {
                            Expr::Binary(BinOp::FloorDiv, p, q) => Expr::Binary(BinOp::Div, p, q),
                            Expr::Binary(BinOp::FloorMod, p, q) => Expr::Binary(BinOp::Mod, p, q),
                            e => e,
                        })
                    } else {
                        r
                    }
                }
                BinOp::Min | BinOp::Max => {
                    let d = Affine::from_expr(x).minus(&Affine::from_expr(y)).to_expr();
                    match bound(&d, b) {
                        Some((_, hi)) if hi <= 0 => {
                            if op == BinOp::Min {
                                (**x).clone()
                            } else {
                                (**y).clone()
                            }
                        }
                        Some((lo, _)) if lo >= 0 => {
                            if op == BinOp::Min {
                                (**y).clone()
                            } else {
                                (**x).clone()
                            }
                        }
                        _ => n,
                    }
                }
                op if op.is_comparison() => {
                    let d = Affine::from_expr(x).minus(&Affine::from_expr(y)).to_expr();
                    let Some((lo, hi)) = bound(&d, b) else {
                        return n;
                    };
                    let decided = match op {
                        BinOp::Lt => (hi < 0).then_some(true).or((lo >= 0).then_some(false)),
                        BinOp::Le => (hi <= 0).then_some(true).or((lo > 0).then_some(false)),
                        BinOp::Gt => (lo > 0).then_some(true).or((hi <= 0).then_some(false)),
                        BinOp::Ge => (lo >= 0).then_some(true).or((hi < 0).then_some(false)),
                        BinOp::Eq => (lo == 0 && hi == 0)
                            .then_some(true)
                            .or((lo > 0 || hi < 0).then_some(false)),
                        BinOp::Ne => (lo == 0 && hi == 0)
                            .then_some(false)
                            .or((lo > 0 || hi < 0).then_some(true)),
                        _ => None,
                    };
                    decided.map(Expr::Bool).unwrap_or(n)
                }
                _ => n,
            }
        }
        Expr::Unary(UnOp::Not, x) => match &**x {
            Expr::Bool(v) => Expr::Bool(!v),
            _ => n,
        },
        Expr::Unary(UnOp::Neg, x) => match &**x {
            Expr::Float(v, d) => Expr::Float(-v, *d),
            _ if is_int(x) => canon(&n, b),
            _ => n,
        },
        Expr::Select(c, t, f) => match &**c {
            Expr::Bool(true) => (**t).clone(),
            Expr::Bool(false) => (**f).clone(),
            _ if t == f => (**t).clone(),
            _ => n,
        },
        Expr::Cast(d, x) => match (&**x, d) {
            (Expr::Int(v, _), d) if d.is_int() => Expr::Int(*v, *d),
            (Expr::Int(v, _), d) if d.is_float() => Expr::Float(*v as f64, *d),
            (Expr::Float(v, _), DType::F32) => Expr::Float(*v as f32 as f64, DType::F32),
            (e, d) if e.dtype() == *d => e.clone(),
            _ => n,
        },
        _ => n,
    }
}
