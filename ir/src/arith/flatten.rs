//! Folding flattened indices back together, for emission.
//!
//! A fused prologue or epilogue takes a row index apart and puts it together again: an
//! im2col reads `x[i // 784 * 100352 + i // 28 % 28 * 3584 + i % 28 * 128 + ...]` for the
//! NHWC pixel `(i // 784, i // 28 % 28, i % 28)`, and a reshaped filter reads
//! `w[kk // 384 * 49152 + kk // 128 % 3 * 16384 + kk % 128 * 128 + j]`. Both sums are
//! plain row-major offsets (`i * 128`, `kk * 128`): each division pair `q // c * (k·c) +
//! q % c * k` is `q * k`. [`fold_flattened`] rewrites them so the target computes one
//! multiply instead of a chain of divisions per access (on an H100, a third of the
//! instructions of a 3×3 conv's main loop).
//!
//! The bounds prover works on the unfolded form, where the quotients it needs (`i // 28 %
//! 28` bounded by the padding guard) are still atoms; emitters fold after proving. The
//! identity is exact for floor and for C's truncating division alike, at any sign, so a
//! folded index is the same value, and never overflows where the original did not.

use super::Affine;
use crate::dtype::DType;
use crate::expr::{BinOp, Expr};

/// `e` with every `q // c * (k·c) + q % c * k` in its sums replaced by `q * k`, also where
/// the quotient is written merged with an inner division (`z // (d·c)` for `(z // d) // c`,
/// `d, c > 0`), repeatedly: see the module docs. Floor pairs and truncating pairs
/// (`/`, `%` of non-negative operands) fold; a floor quotient never pairs with a
/// truncating remainder.
pub fn fold_flattened(e: &Expr) -> Expr {
    e.rewrite(&mut |n| match &n {
        Expr::Binary(BinOp::Add | BinOp::Sub, _, _) if n.dtype() == DType::I32 => {
            let mut a = Affine::from_expr(&n);
            if fold_pairs(&mut a) { a.to_expr() } else { n }
        }
        _ => n,
    })
}

/// Folds every pair of `a` (see [`fold_flattened`]); whether any was found.
fn fold_pairs(a: &mut Affine) -> bool {
    let mut any = false;
    while let Some((rem, quot, q, k)) = find_pair(a) {
        a.terms.retain(|(t, _)| *t != rem && *t != quot);
        a.add_scaled(&Affine::from_expr(&q), k);
        any = true;
    }
    any
}

/// A remainder term `q % c * k` whose quotient `q // c` (or its merged form) has the
/// coefficient `k·c`: `(remainder, quotient, q, k)`.
fn find_pair(a: &Affine) -> Option<(Expr, Expr, Expr, i64)> {
    for (atom, k) in &a.terms {
        let (div_op, q, c) = match atom {
            Expr::Binary(BinOp::FloorMod, q, c) => (BinOp::FloorDiv, q, c),
            Expr::Binary(BinOp::Mod, q, c) => (BinOp::Div, q, c),
            _ => continue,
        };
        let Some(c) = c.as_int().filter(|c| *c > 0) else {
            continue;
        };
        let plain = Expr::Binary(div_op, q.clone(), Box::new(Expr::int(c)));
        let merged = match &**q {
            Expr::Binary(op, z, d) if *op == div_op => d
                .as_int()
                .filter(|d| *d > 0)
                .map(|d| Expr::Binary(div_op, z.clone(), Box::new(Expr::int(d * c)))),
            _ => None,
        };
        let quot = [Some(plain), merged]
            .into_iter()
            .flatten()
            .find(|t| a.coef(t) == k * c);
        if let Some(quot) = quot {
            return Some((atom.clone(), quot, (**q).clone(), *k));
        }
    }
    None
}
