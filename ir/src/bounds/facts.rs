//! What is known at one point of a kernel, and the proof that an index expression is
//! non-negative there.

use std::collections::HashMap;

use crate::arith::{Affine, Bounds, bound, gcd, modular, simplify_with};
use crate::dtype::DType;
use crate::expr::{BinOp, Expr, UnOp, Var};

/// Guards beyond this many (innermost kept) are not used in proofs: the search is
/// exponential in the guards it combines, and real kernels have a handful.
const MAX_GUARDS: usize = 12;
/// At most this many guards are combined in one proof.
const MAX_DEPTH: usize = 4;
/// `let` values are inlined at most this deep.
const MAX_INLINE: usize = 8;

/// Ranges, `let` values and guards in scope at one point of a kernel.
#[derive(Clone, Debug, Default)]
pub(super) struct Facts {
    pub bounds: Bounds,
    /// Conditions known to hold, split at `&&`.
    guards: Vec<Expr>,
    lets: HashMap<Var, Expr>,
}

impl Facts {
    pub fn new(bounds: Bounds) -> Facts {
        Facts {
            bounds,
            ..Facts::default()
        }
    }

    /// `var` runs over `0..extent`.
    pub fn enter_loop(&mut self, var: &Var, extent: i64) {
        self.bounds.set_extent(var, extent);
    }

    /// `let var = value`.
    pub fn enter_let(&mut self, var: &Var, value: &Expr) {
        self.bounds.set_let(var, value);
        self.lets.insert(var.clone(), value.clone());
    }

    /// `cond` holds from here on.
    pub fn assume(&mut self, cond: &Expr) {
        let mut parts = Vec::new();
        self.split(cond, &mut parts, 0);
        for p in parts {
            self.guards.push(p);
        }
        // Twice, so that a range narrowed by one guard narrows another.
        self.narrow();
        self.narrow();
    }

    /// `cond` does not hold from here on (used only when `cond` is one comparison).
    pub fn assume_not(&mut self, cond: &Expr) {
        if let Some(n) = negate(cond) {
            self.assume(&n);
        }
    }

    /// The conjuncts of `cond`, with boolean `let` variables replaced by their values.
    fn split(&self, cond: &Expr, out: &mut Vec<Expr>, depth: usize) {
        match cond {
            Expr::Binary(BinOp::And, a, b) => {
                self.split(a, out, depth);
                self.split(b, out, depth);
            }
            Expr::Var(v) if depth < MAX_INLINE && self.lets.contains_key(v) => {
                self.split(&self.lets[v], out, depth + 1)
            }
            Expr::Unary(UnOp::Not, a) => match negate(a) {
                Some(n) => self.split(&n, out, depth),
                None => out.push(cond.clone()),
            },
            _ => out.push(cond.clone()),
        }
    }

    /// Narrows the range of every variable and thread index that a guard bounds: from
    /// `c·x + rest ≥ 0` and `rest ≤ hi`, `x ≥ ⌈−hi / c⌉` (c > 0) or `x ≤ ⌊hi / −c⌋` (c < 0);
    /// and of each compound expression a guard compares with a constant
    /// ([`Facts::narrow_compound`]).
    fn narrow(&mut self) {
        for g in self.guards.clone() {
            self.narrow_compound(&g);
        }
        let guards: Vec<Affine> = self
            .guards
            .iter()
            .filter_map(inequality)
            .flatten()
            .collect();
        for ge in &guards {
            for (atom, c) in &ge.terms {
                let mut rest = ge.clone();
                rest.add_term(atom.clone(), -c);
                let Some((_, hi)) = affine_bound(&rest, &self.bounds) else {
                    continue;
                };
                let (lo, up) = if *c > 0 {
                    (-hi.div_euclid(*c), i64::MAX / 4)
                } else {
                    (i64::MIN / 4, hi.div_euclid(-c))
                };
                match atom {
                    Expr::Var(v) => self.bounds.narrow(v, lo, up),
                    Expr::Builtin(a) => self.bounds.narrow_axis(*a, lo, up),
                    _ => {}
                }
            }
        }
    }

    /// From `x < b`, `x <= b`, `x > b` or `x >= b` with `b` a constant and `x` a
    /// compound integer expression, the range of `x`; and where `x` is `y // c` (c > 0),
    /// the range of `y` (`y // c < b` holds exactly when `y < b·c`). The fused loop of a
    /// rule-based schedule is guarded as `(blockIdx_x * 256 + threadIdx_x) // 5 < 180`,
    /// and an epilogue's permuted store index divides the same sum by 450: its range
    /// then follows.
    fn narrow_compound(&mut self, guard: &Expr) {
        let Expr::Binary(op, x, y) = guard else {
            return;
        };
        let (Some(b), true) = (y.as_int(), x.dtype() == DType::I32) else {
            return;
        };
        let (mut lo, mut hi) = match op {
            BinOp::Lt => (i64::MIN / 4, b - 1),
            BinOp::Le => (i64::MIN / 4, b),
            BinOp::Gt => (b + 1, i64::MAX / 4),
            BinOp::Ge => (b, i64::MAX / 4),
            _ => return,
        };
        let mut x: &Expr = x;
        loop {
            if matches!(x, Expr::Var(_) | Expr::Builtin(_) | Expr::Int(..)) {
                return;
            }
            self.bounds.narrow_expr(x, lo, hi);
            match x {
                Expr::Binary(BinOp::FloorDiv, inner, c) => {
                    let Some(c) = c.as_int().filter(|c| *c > 0) else {
                        return;
                    };
                    (lo, hi) = (
                        if lo <= i64::MIN / 4 {
                            lo
                        } else {
                            lo.saturating_mul(c)
                        },
                        if hi >= i64::MAX / 4 {
                            hi
                        } else {
                            hi.saturating_mul(c).saturating_add(c - 1)
                        },
                    );
                    x = inner;
                }
                _ => return,
            }
        }
    }

    /// The interval of `e` (with narrowed ranges).
    pub fn interval(&self, e: &Expr) -> Option<(i64, i64)> {
        bound(e, &self.bounds)
    }

    /// True if `e ≥ 0` follows from what is known.
    pub fn nonneg(&self, e: &Expr) -> bool {
        if bound(e, &self.bounds).is_some_and(|(lo, _)| lo >= 0) {
            return true;
        }
        // The index and the guards as written; simplified with the narrowed ranges (a
        // guard `i < 784` makes `i // 784` zero and `i // 196 % 4` just `i // 196`); and
        // with `let` variables inlined, since a guard may spell out what the index names.
        let simplified = |x: &Expr| simplify_with(x, &self.bounds);
        let inlined = |x: &Expr| simplify_with(&self.inline(x), &self.bounds);
        let preps: [&dyn Fn(&Expr) -> Expr; 3] = [&|x: &Expr| x.clone(), &simplified, &inlined];
        let tries = if self.lets.is_empty() { 2 } else { 3 };
        for with_identities in [false, true] {
            for prep in &preps[..tries] {
                if self.nonneg_by_guards(&prep(e), prep, with_identities) {
                    return true;
                }
            }
        }
        false
    }

    fn inline(&self, e: &Expr) -> Expr {
        let mut e = e.clone();
        for _ in 0..MAX_INLINE {
            if !e.vars().iter().any(|v| self.lets.contains_key(v)) {
                break;
            }
            e = e.substitute(&self.lets);
        }
        e
    }

    /// `t ≥ 0` as `t = Σ λ·guard + rest` with `λ ≥ 0` and `rest ≥ 0` by intervals, after
    /// `prep` rewrote `t` and the guards. With `with_identities`, what division says of
    /// its operand joins the guards (see [`identities`]).
    fn nonneg_by_guards(
        &self,
        t: &Expr,
        prep: &dyn Fn(&Expr) -> Expr,
        with_identities: bool,
    ) -> bool {
        let start = self.guards.len().saturating_sub(MAX_GUARDS);
        let mut guards: Vec<Affine> = self.guards[start..]
            .iter()
            .filter_map(|g| inequality(&prep(g)))
            .flatten()
            .map(|g| self.tighten(g))
            .collect();
        let t = Affine::from_expr(t);
        if with_identities {
            let more = identities(
                t.terms
                    .iter()
                    .chain(guards.iter().flat_map(|g| &g.terms))
                    .map(|(a, _)| a),
                &self.bounds,
            );
            if more.is_empty() {
                return false;
            }
            guards.extend(more);
        }
        guards.truncate(31);
        let ranges = Ranges {
            bounds: &self.bounds,
            guards: &guards,
        };
        search(&t, &guards, 0, MAX_DEPTH, &ranges)
    }

    /// `g ≥ 0` tightened by what is known of its terms modulo some number: with
    /// `g = v + k` and `v ≡ r (mod m)`, `v ≥ −k` gives `v ≥ −k + ((r + k) mod m)`.
    fn tighten(&self, mut g: Affine) -> Affine {
        let k = g.constant;
        let mut v = g.clone();
        v.constant = 0;
        if v.terms.is_empty() {
            return g;
        }
        let (m, r) = modular(&v.to_expr(), &self.bounds);
        if m > 1 {
            g.constant -= (r + k).rem_euclid(m);
        }
        g
    }
}

/// The negation of one comparison (`!(a < b)` is `a >= b`), if `cond` is one.
fn negate(cond: &Expr) -> Option<Expr> {
    let Expr::Binary(op, a, b) = cond else {
        return match cond {
            Expr::Unary(UnOp::Not, a) => Some((**a).clone()),
            Expr::Bool(v) => Some(Expr::Bool(!v)),
            _ => None,
        };
    };
    let flipped = match op {
        BinOp::Lt => BinOp::Ge,
        BinOp::Le => BinOp::Gt,
        BinOp::Gt => BinOp::Le,
        BinOp::Ge => BinOp::Lt,
        BinOp::Eq => BinOp::Ne,
        BinOp::Ne => BinOp::Eq,
        _ => return None,
    };
    Some(Expr::Binary(flipped, a.clone(), b.clone()))
}

/// A comparison of `i32` values as linear forms that are `≥ 0` (two for `==`); `None` for
/// anything else.
fn inequality(cond: &Expr) -> Option<Vec<Affine>> {
    let Expr::Binary(op, a, b) = cond else {
        return None;
    };
    if a.dtype() != DType::I32 || b.dtype() != DType::I32 {
        return None;
    }
    let (fa, fb) = (Affine::from_expr(a), Affine::from_expr(b));
    let ge = |x: &Affine, y: &Affine, k: i64| {
        // x − y − k ≥ 0
        let mut d = x.minus(y);
        d.constant -= k;
        d
    };
    Some(match op {
        BinOp::Lt => vec![ge(&fb, &fa, 1)],
        BinOp::Le => vec![ge(&fb, &fa, 0)],
        BinOp::Gt => vec![ge(&fa, &fb, 1)],
        BinOp::Ge => vec![ge(&fa, &fb, 0)],
        BinOp::Eq => vec![ge(&fa, &fb, 0), ge(&fb, &fa, 0)],
        _ => return None,
    })
}

/// What division says of its operand, as linear facts over the atoms `atoms` mentions:
/// - for each `x % c` with its quotient `q` also present (`x // c`, or `z // (d·c)` when
///   `x` is `z // d`: a division of a division), `x − c·q − x % c = 0` (true of C's
///   truncating pair as well);
/// - for each other `x // c` (or `x / c` with `x ≥ 0`), `0 ≤ x − c·(x // c) ≤ c − 1`.
///
/// A guard written on `(m0 + r) // 128` and `(m0 + r) % 128` then meets an index that the
/// simplifier wrote as `m0 + r`, and a guard on `i // 140` meets `i // 560 * 4 + i // 140 % 4`.
fn identities<'a>(atoms: impl Iterator<Item = &'a Expr>, b: &Bounds) -> Vec<Affine> {
    let atoms: Vec<&Expr> = atoms.collect();
    let mut out = Vec::new();
    let mut done: Vec<Expr> = Vec::new();
    let both = |out: &mut Vec<Affine>, eq: Affine| {
        out.push(Affine::default().minus(&eq));
        out.push(eq);
    };
    for a in &atoms {
        let Expr::Binary(op @ (BinOp::FloorMod | BinOp::Mod), x, y) = a else {
            continue;
        };
        let Some(c) = y.as_int().filter(|c| *c > 0) else {
            continue;
        };
        let divop = if *op == BinOp::Mod {
            BinOp::Div
        } else {
            BinOp::FloorDiv
        };
        let mut quotients = vec![Expr::Binary(divop, x.clone(), y.clone())];
        if let Expr::Binary(inner, z, d) = &**x
            && *inner == divop
            && let Some(d) = d.as_int().filter(|d| *d > 0)
        {
            quotients.push(Expr::Binary(divop, z.clone(), Box::new(Expr::int(d * c))));
        }
        let Some(q) = quotients.into_iter().find(|q| atoms.contains(&q)) else {
            continue;
        };
        let mut eq = Affine::from_expr(x);
        eq.add_term(q.clone(), -c);
        eq.add_term((*a).clone(), -1);
        both(&mut out, eq);
        done.push(q);
    }
    for a in &atoms {
        let Expr::Binary(op @ (BinOp::FloorDiv | BinOp::Div), x, y) = a else {
            continue;
        };
        let Some(c) = y.as_int().filter(|c| *c > 0) else {
            continue;
        };
        if done.contains(a)
            || !(*op == BinOp::FloorDiv || bound(x, b).is_some_and(|(lo, _)| lo >= 0))
        {
            continue;
        }
        done.push((*a).clone());
        // r = x − c·(x // c) in 0..c
        let mut r = Affine::from_expr(x);
        r.add_term((*a).clone(), -c);
        let mut below = Affine::default().minus(&r);
        below.constant += c - 1;
        out.push(r);
        out.push(below);
    }
    out
}

/// The interval of a linear form whose atoms all have intervals.
fn affine_bound(a: &Affine, b: &Bounds) -> Option<(i64, i64)> {
    affine_bound_by(a, &mut |atom| bound(atom, b))
}

/// [`affine_bound`] with each atom's interval from `atom_bound`.
fn affine_bound_by(
    a: &Affine,
    atom_bound: &mut dyn FnMut(&Expr) -> Option<(i64, i64)>,
) -> Option<(i64, i64)> {
    let (mut lo, mut hi) = (a.constant as i128, a.constant as i128);
    for (atom, c) in &a.terms {
        let (x, y) = atom_bound(atom)?;
        let (p, q) = (*c as i128 * x as i128, *c as i128 * y as i128);
        lo += p.min(q);
        hi += p.max(q);
    }
    let clamp = |v: i128| v.clamp(i64::MIN as i128 / 4, i64::MAX as i128 / 4) as i64;
    Some((clamp(lo), clamp(hi)))
}

/// Depth-first search for `t = Σ λ·g + rest`, `λ > 0`, each guard used at most once, that
/// leaves a `rest` whose interval is non-negative. Each step picks a guard and one of its
/// atoms that `t` also has with the same sign, and subtracts the multiple that cancels it
/// (scaling `t` by a positive factor first when the coefficients do not divide).
fn search(t: &Affine, guards: &[Affine], used: u32, depth: usize, b: &Ranges) -> bool {
    if b.affine(t, 0).is_some_and(|(lo, _)| lo >= 0) {
        return true;
    }
    if depth == 0 {
        return false;
    }
    for (i, g) in guards.iter().enumerate() {
        if used & (1 << i) != 0 {
            continue;
        }
        let mut tried: Vec<(i64, i64)> = Vec::new();
        for (atom, gc) in &g.terms {
            let tc = t.coef(atom);
            if tc == 0 || (tc > 0) != (*gc > 0) {
                continue;
            }
            // scale · t − λ · g cancels the atom: scale = |gc| / d, λ = |tc| / d.
            let d = gcd(tc, *gc);
            let (scale, lambda) = (gc.abs() / d, tc.abs() / d);
            if tried.contains(&(scale, lambda)) {
                continue;
            }
            tried.push((scale, lambda));
            let mut next = Affine::default();
            next.add_scaled(t, scale);
            next.add_scaled(g, -lambda);
            if search(&next, guards, used | (1 << i), depth - 1, b) {
                return true;
            }
        }
    }
    false
}

/// Intervals that also use the guards: a division or modulo of a guarded expression
/// (`(m0 + r) // 25` under `m0 + r < 75`) is bounded through its operand's guarded
/// interval. The im2col of an implicit-GEMM convolution indexes with exactly those.
struct Ranges<'a> {
    bounds: &'a Bounds,
    guards: &'a [Affine],
}

/// How deep divisions and modulos are followed into their operands.
const MAX_NESTING: usize = 3;

impl Ranges<'_> {
    /// The interval of a linear form, atoms bounded by [`Ranges::atom`], intersected with
    /// what each guard `g ≥ 0` says of it alone: `t = (t + g) − g ≤ hi(t + g)` and
    /// `t = (t − g) + g ≥ lo(t − g)` (a guard `x < 75` bounds `x` by 74).
    fn affine(&self, t: &Affine, depth: usize) -> Option<(i64, i64)> {
        let own = affine_bound_by(t, &mut |a| self.atom(a, depth));
        let (mut lo, mut hi) = own.unwrap_or((i64::MIN / 4, i64::MAX / 4));
        let mut found = own.is_some();
        if !t.terms.is_empty() {
            for g in self.guards {
                if !g.terms.iter().any(|(a, _)| t.coef(a) != 0) {
                    continue;
                }
                let mut sum = t.clone();
                sum.add_scaled(g, 1);
                if let Some((_, h)) = affine_bound(&sum, self.bounds) {
                    hi = hi.min(h);
                    found = true;
                }
                let diff = t.minus(g);
                if let Some((l, _)) = affine_bound(&diff, self.bounds) {
                    lo = lo.max(l);
                    found = true;
                }
            }
        }
        found.then_some((lo, hi))
    }

    /// The interval of one atom: divisions and modulos by a positive constant through
    /// their operand's guarded interval; anything else by plain intervals.
    fn atom(&self, a: &Expr, depth: usize) -> Option<(i64, i64)> {
        let plain = bound(a, self.bounds);
        let Expr::Binary(op @ (BinOp::FloorDiv | BinOp::Div | BinOp::FloorMod | BinOp::Mod), x, y) =
            a
        else {
            return plain;
        };
        let c = match y.as_int() {
            Some(c) if c > 0 && depth < MAX_NESTING => c,
            _ => return plain,
        };
        let Some((lo, hi)) = self.affine(&Affine::from_expr(x), depth + 1) else {
            return plain;
        };
        let truncating = matches!(op, BinOp::Div | BinOp::Mod);
        let r = match op {
            _ if truncating && lo < 0 => return plain,
            BinOp::FloorDiv | BinOp::Div => (lo.div_euclid(c), hi.div_euclid(c)),
            _ if lo.div_euclid(c) == hi.div_euclid(c) => (lo.rem_euclid(c), hi.rem_euclid(c)),
            _ => (0, c - 1),
        };
        Some(match plain {
            Some((p, q)) => (r.0.max(p), r.1.min(q)),
            None => r,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str) -> (Var, Expr) {
        let v = Var::new(name, DType::I32);
        let e = Expr::Var(v.clone());
        (v, e)
    }

    #[test]
    fn two_guards_combine_for_a_row_major_index() {
        // C[r * 72 + c] in 7200 elements under r < 100 and c < 72; r, c in 0..128.
        let ((rv, r), (cv, c)) = (var("r"), var("c"));
        let mut f = Facts::default();
        f.enter_loop(&rv, 128);
        f.enter_loop(&cv, 128);
        let last = Expr::int(7199) - (r.clone() * 72 + c.clone());
        assert!(!f.nonneg(&last));
        f.assume(&r.clone().lt(100).and(c.clone().lt(72)));
        assert!(f.nonneg(&last));
        // One past the end is not provable.
        assert!(!f.nonneg(&(Expr::int(7198) - (r * 72 + c))));
    }

    #[test]
    fn residues_tighten_a_vector_guard() {
        // B[4·j .. 4·j + 4] in 72 elements under 4·j < 72, j in 0..32: last = 4·j + 3 ≤ 71
        // only because 4·j ≡ 0 (mod 4) makes 4·j < 72 mean 4·j ≤ 68.
        let (jv, j) = var("j");
        let (qv, q) = var("q");
        let mut f = Facts::default();
        f.enter_loop(&jv, 32);
        f.enter_let(&qv, &(j * 4));
        f.assume(&q.clone().lt(72));
        assert!(f.nonneg(&(Expr::int(71) - (q + 3))));
    }

    #[test]
    fn a_guard_on_a_quotient_bounds_a_permuted_index() {
        // A summing kernel's thread i = 256·b + t (b in 0..4, t in 0..256) runs over
        // [180, 5] under i // 5 < 180, and stores y[n, k, oh, ow] (2 × 5 × 9 × 10) at
        // i // 450 · 450 + i % 5 · 90 + i // 50 % 9 · 10 + i // 5 % 10.
        let ((bv, b), (tv, t)) = (var("b"), var("t"));
        let mut f = Facts::default();
        f.enter_loop(&bv, 4);
        f.enter_loop(&tv, 256);
        let i = b * 256 + t;
        let index = i.clone().floordiv(450) * 450
            + i.clone().floormod(5) * 90
            + i.clone().floordiv(50).floormod(9) * 10
            + i.clone().floordiv(5).floormod(10);
        let last = Expr::int(899) - index.clone();
        assert!(!f.nonneg(&last));
        f.assume(&i.clone().floordiv(5).lt(180));
        assert!(f.nonneg(&last));
        // One element shorter is not provable: i = 899 stores there.
        assert!(!f.nonneg(&(Expr::int(898) - index)));
    }
}
