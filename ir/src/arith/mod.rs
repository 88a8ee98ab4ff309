//! Integer arithmetic analysis: bounds, linear (affine) forms and the simplifier.
//!
//! Index expressions in weft are `i32` combinations of loop variables, block variables
//! and thread indices with floor division and modulo. Everything here works on those:
//! [`Bounds`] gives each variable its range, [`bound`] computes an interval,
//! [`Affine`] is a sum of `coefficient * atom` terms plus a constant, and [`simplify`]
//! folds constants, cancels terms and removes divisions and modulos the bounds prove
//! trivial (`(a*c + b) // c → a` when `0 ≤ b < c`). [`fold_flattened`] puts taken-apart
//! row-major offsets back together for the emitters.

mod affine;
mod flatten;
mod simplify;

pub use affine::Affine;
pub use flatten::fold_flattened;
pub use simplify::{simplify, simplify_with};

use std::collections::HashMap;

use crate::expr::{BinOp, Expr, ThreadAxis, UnOp, Var};

/// Known ranges of variables and thread indices (inclusive bounds).
#[derive(Clone, Debug, Default)]
pub struct Bounds {
    vars: HashMap<Var, (i64, i64)>,
    axes: HashMap<ThreadAxis, (i64, i64)>,
    /// What is known of a `let` variable modulo some number (see [`modular`]).
    mods: HashMap<Var, (i64, i64)>,
    /// Ranges of compound integer expressions that guards bound (`i < 900` where `i` is
    /// `blockIdx_x * 256 + threadIdx_x`): intersected with what [`bound`] finds from
    /// their parts. A short list: kernels have a handful of guards.
    exprs: Vec<(Expr, (i64, i64))>,
}

impl Bounds {
    pub fn new() -> Bounds {
        Bounds::default()
    }
    /// The thread and block indices of a launch of `grid` blocks of `block` threads, each
    /// in `0..extent`: what every walk over a lowered kernel starts from.
    pub fn of_launch(grid: [u32; 3], block: [u32; 3]) -> Bounds {
        let mut b = Bounds::new();
        for axis in ThreadAxis::ALL {
            let extent = if axis.is_block() {
                grid[axis.dim()]
            } else {
                block[axis.dim()]
            };
            b.set_axis(axis, extent as i64);
        }
        b
    }
    /// `var` runs over `0..extent`.
    pub fn set_extent(&mut self, var: &Var, extent: i64) {
        self.vars.insert(var.clone(), (0, extent.max(1) - 1));
    }
    /// `var` lies in `lo..=hi`.
    pub fn set_range(&mut self, var: &Var, lo: i64, hi: i64) {
        self.vars.insert(var.clone(), (lo, hi));
    }
    /// The thread index `axis` runs over `0..extent`.
    pub fn set_axis(&mut self, axis: ThreadAxis, extent: i64) {
        self.axes.insert(axis, (0, extent.max(1) - 1));
    }
    pub fn remove(&mut self, var: &Var) {
        self.vars.remove(var);
        self.mods.remove(var);
    }
    /// `var = coeff * k + base` for some integer `k` (a `let` of a known residue).
    pub fn set_modular(&mut self, var: &Var, coeff: i64, base: i64) {
        self.mods.insert(var.clone(), (coeff, base));
    }
    /// Records what is known of `let var = value`: its range and its residue.
    pub fn set_let(&mut self, var: &Var, value: &Expr) {
        match bound(value, self) {
            Some((lo, hi)) => self.set_range(var, lo, hi),
            None => {
                self.vars.remove(var);
            }
        }
        let (c, r) = modular(value, self);
        if c != 1 {
            self.set_modular(var, c, r);
        } else {
            self.mods.remove(var);
        }
    }
    /// Intersects what is known of `var` with `lo..=hi` (a guard that holds). A variable
    /// with no known range takes `lo..=hi`.
    pub fn narrow(&mut self, var: &Var, lo: i64, hi: i64) {
        let (a, b) = self.vars.get(var).copied().unwrap_or((lo, hi));
        self.vars.insert(var.clone(), (a.max(lo), b.min(hi)));
    }
    /// Intersects the range of the thread index `axis` with `lo..=hi`.
    pub fn narrow_axis(&mut self, axis: ThreadAxis, lo: i64, hi: i64) {
        let (a, b) = self.axes.get(&axis).copied().unwrap_or((lo, hi));
        self.axes.insert(axis, (a.max(lo), b.min(hi)));
    }
    /// Intersects what is known of the compound expression `e` with `lo..=hi` (a guard
    /// that holds).
    pub fn narrow_expr(&mut self, e: &Expr, lo: i64, hi: i64) {
        match self.exprs.iter_mut().find(|(x, _)| x == e) {
            Some((_, r)) => *r = (r.0.max(lo), r.1.min(hi)),
            None => self.exprs.push((e.clone(), (lo, hi))),
        }
    }
    /// The range a guard gave the compound expression `e`, if one did.
    fn expr_range(&self, e: &Expr) -> Option<(i64, i64)> {
        if self.exprs.is_empty() {
            return None;
        }
        self.exprs.iter().find(|(x, _)| x == e).map(|(_, r)| *r)
    }
    pub fn get(&self, var: &Var) -> Option<(i64, i64)> {
        self.vars.get(var).copied()
    }
    pub fn axis(&self, axis: ThreadAxis) -> Option<(i64, i64)> {
        self.axes.get(&axis).copied()
    }
}

fn clamp(v: i128) -> i64 {
    v.clamp(i64::MIN as i128 / 4, i64::MAX as i128 / 4) as i64
}

fn floor_div(a: i64, b: i64) -> i64 {
    a.div_euclid(b) - if b < 0 && a.rem_euclid(b) != 0 { 1 } else { 0 }
}

/// Python-style floor division of integers (`b != 0`).
pub fn floordiv_i64(a: i64, b: i64) -> i64 {
    if b > 0 {
        a.div_euclid(b)
    } else {
        floor_div(a, b)
    }
}

/// Python-style floor modulo of integers (`b != 0`).
pub fn floormod_i64(a: i64, b: i64) -> i64 {
    a - b * floordiv_i64(a, b)
}

/// The inclusive integer interval `e` lies in, if the bounds determine one.
pub fn bound(e: &Expr, b: &Bounds) -> Option<(i64, i64)> {
    let found = bound_of_parts(e, b);
    match (b.expr_range(e), found) {
        (Some(g), Some(f)) => Some((g.0.max(f.0), g.1.min(f.1))),
        (g, f) => f.or(g),
    }
}

/// [`bound`] from the parts of `e`.
fn bound_of_parts(e: &Expr, b: &Bounds) -> Option<(i64, i64)> {
    Some(match e {
        Expr::Int(v, _) => (*v, *v),
        Expr::Bool(v) => (*v as i64, *v as i64),
        Expr::Var(v) => b.get(v)?,
        Expr::Builtin(a) => b.axis(*a)?,
        Expr::Unary(UnOp::Neg, a) => {
            let (lo, hi) = bound(a, b)?;
            (-hi, -lo)
        }
        Expr::Binary(op, x, y) => {
            if !x.dtype().is_int() && !op.is_predicate() {
                return None;
            }
            match op {
                BinOp::Add => {
                    let (a, c) = (bound(x, b)?, bound(y, b)?);
                    (
                        clamp(a.0 as i128 + c.0 as i128),
                        clamp(a.1 as i128 + c.1 as i128),
                    )
                }
                BinOp::Sub => {
                    let (a, c) = (bound(x, b)?, bound(y, b)?);
                    (
                        clamp(a.0 as i128 - c.1 as i128),
                        clamp(a.1 as i128 - c.0 as i128),
                    )
                }
                BinOp::Mul => {
                    let (a, c) = (bound(x, b)?, bound(y, b)?);
                    let p = [
                        a.0 as i128 * c.0 as i128,
                        a.0 as i128 * c.1 as i128,
                        a.1 as i128 * c.0 as i128,
                        a.1 as i128 * c.1 as i128,
                    ];
                    (clamp(*p.iter().min()?), clamp(*p.iter().max()?))
                }
                BinOp::FloorDiv | BinOp::Div => {
                    let a = bound(x, b)?;
                    let c = y.as_int()?;
                    if c <= 0 || (*op == BinOp::Div && a.0 < 0) {
                        return None;
                    }
                    (floordiv_i64(a.0, c), floordiv_i64(a.1, c))
                }
                BinOp::FloorMod | BinOp::Mod => {
                    let c = y.as_int()?;
                    if c <= 0 {
                        return None;
                    }
                    match bound(x, b) {
                        Some(a) if a.0 < 0 && *op == BinOp::Mod => (-(c - 1), c - 1),
                        Some(a) if floordiv_i64(a.0, c) == floordiv_i64(a.1, c) => {
                            (floormod_i64(a.0, c), floormod_i64(a.1, c))
                        }
                        None if *op == BinOp::Mod => (-(c - 1), c - 1),
                        _ => (0, c - 1),
                    }
                }
                BinOp::Min => {
                    let (a, c) = (bound(x, b)?, bound(y, b)?);
                    (a.0.min(c.0), a.1.min(c.1))
                }
                BinOp::Max => {
                    let (a, c) = (bound(x, b)?, bound(y, b)?);
                    (a.0.max(c.0), a.1.max(c.1))
                }
                _ if op.is_predicate() => (0, 1),
                _ => return None,
            }
        }
        Expr::Select(_, t, f) => {
            let (a, c) = (bound(t, b)?, bound(f, b)?);
            (a.0.min(c.0), a.1.max(c.1))
        }
        Expr::Cast(d, a) if d.is_int() && a.dtype().is_int() => bound(a, b)?,
        _ => return None,
    })
}

/// The greatest common divisor of `|a|` and `|b|` (0 only when both are 0).
pub(crate) fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `e = coeff * k + base` for some integer `k` (TVM's modular set): what is known about
/// `e` modulo `coeff`. `coeff == 0` means `e == base`.
pub fn modular(e: &Expr, b: &Bounds) -> (i64, i64) {
    fn norm((c, r): (i64, i64)) -> (i64, i64) {
        if c == 0 { (0, r) } else { (c, r.rem_euclid(c)) }
    }
    let r = match e {
        Expr::Int(v, _) => (0, *v),
        Expr::Binary(BinOp::Add, x, y) => {
            let (a, c) = (modular(x, b), modular(y, b));
            (gcd(a.0, c.0), a.1 + c.1)
        }
        Expr::Binary(BinOp::Sub, x, y) => {
            let (a, c) = (modular(x, b), modular(y, b));
            (gcd(a.0, c.0), a.1 - c.1)
        }
        Expr::Binary(BinOp::Mul, x, y) => {
            let (a, c) = (modular(x, b), modular(y, b));
            (gcd(gcd(a.0 * c.0, a.0 * c.1), a.1 * c.0), a.1 * c.1)
        }
        Expr::Binary(BinOp::FloorMod, x, y) => match y.as_int() {
            Some(m) if m > 0 => {
                let a = modular(x, b);
                if a.0 != 0 && m % a.0 == 0 {
                    (a.0, a.1)
                } else if a.0 == 0 {
                    (0, floormod_i64(a.1, m))
                } else {
                    (gcd(a.0, m), a.1)
                }
            }
            _ => (1, 0),
        },
        Expr::Unary(UnOp::Neg, x) => {
            let a = modular(x, b);
            (a.0, -a.1)
        }
        // The result is one of the two: what both share (a clamped index keeps the
        // alignment of the index and of the bound).
        Expr::Binary(BinOp::Min | BinOp::Max, x, y) => {
            let (a, c) = (modular(x, b), modular(y, b));
            (gcd(gcd(a.0, c.0), a.1 - c.1), a.1)
        }
        Expr::Var(v) if b.mods.contains_key(v) => match bound(e, b) {
            Some((lo, hi)) if lo == hi => (0, lo),
            _ => b.mods[v],
        },
        _ => match bound(e, b) {
            Some((lo, hi)) if lo == hi => (0, lo),
            _ => (1, 0),
        },
    };
    norm(r)
}

/// True if `e` is provably non-negative.
pub fn is_nonneg(e: &Expr, b: &Bounds) -> bool {
    bound(e, b).is_some_and(|(lo, _)| lo >= 0)
}
