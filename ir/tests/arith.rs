//! The simplifier and bound analysis.

use weft_ir::arith::{Bounds, bound, fold_flattened, simplify, simplify_with};
use weft_ir::expr::BinOp;
use weft_ir::prelude::*;

fn v(name: &str) -> Var {
    Var::index(name)
}

#[test]
fn constant_folding_and_linear_canonical_form() {
    let x = v("x");
    let e = (x.expr() + 3) * 4 - x.expr() * 2 + 7 - 19;
    assert_eq!(simplify(&e).to_string(), "x * 2");
    assert_eq!(simplify(&(Expr::int(7) * 6 - 2)).to_string(), "40");
}

#[test]
fn division_of_a_multiple_plus_a_small_remainder() {
    // (a*c + b) // c -> a and (a*c + b) % c -> b when 0 <= b < c.
    let (a, b) = (v("a"), v("b"));
    let mut bounds = Bounds::new();
    bounds.set_extent(&b, 8);
    let e = (a.expr() * 8 + b.expr()).floordiv(8);
    assert_eq!(simplify_with(&e, &bounds).to_string(), "a");
    let e = (a.expr() * 8 + b.expr()).floormod(8);
    assert_eq!(simplify_with(&e, &bounds).to_string(), "b");
    // Without the bound on b nothing can be dropped.
    assert_eq!(
        simplify(&(a.expr() * 8 + b.expr()).floordiv(8)).to_string(),
        "a + b // 8"
    );
}

#[test]
fn division_and_modulo_recombine() {
    let x = v("x");
    let e = x.expr().floordiv(4) * 2048 + x.expr().floormod(4) * 512;
    assert_eq!(simplify(&e).to_string(), "x * 512");
}

#[test]
fn nested_divisions_and_common_factors() {
    let x = v("x");
    assert_eq!(
        simplify(&x.expr().floordiv(4).floordiv(8)).to_string(),
        "x // 32"
    );
    assert_eq!(simplify(&(x.expr() * 4).floordiv(8)).to_string(), "x // 2");
    assert_eq!(
        simplify(&(x.expr() * 4).floormod(8)).to_string(),
        "x % 2 * 4"
    );
    assert_eq!(
        simplify(&x.expr().floormod(16).floormod(4)).to_string(),
        "x % 4"
    );
}

#[test]
fn comparisons_and_min_max_decided_by_bounds() {
    let (i, j) = (v("i"), v("j"));
    let mut b = Bounds::new();
    b.set_extent(&i, 16);
    b.set_extent(&j, 4);
    assert_eq!(simplify_with(&i.expr().lt(16), &b), Expr::Bool(true));
    assert_eq!(
        simplify_with(&(i.expr() + j.expr()).ge(20), &b),
        Expr::Bool(false)
    );
    assert_eq!(simplify_with(&i.expr().lt(8), &b).to_string(), "i < 8");
    assert_eq!(
        simplify_with(&i.expr().min(j.expr() + 20), &b).to_string(),
        "i"
    );
    assert_eq!(
        simplify_with(&(i.expr() + 1).max(Expr::int(0)), &b).to_string(),
        "i + 1"
    );
}

#[test]
fn a_variable_with_a_single_value_is_that_value() {
    let (i, j) = (v("i"), v("j"));
    let mut b = Bounds::new();
    b.set_extent(&i, 1);
    b.set_extent(&j, 8);
    assert_eq!(
        simplify_with(&(i.expr() * 512 + j.expr()), &b).to_string(),
        "j"
    );
}

#[test]
fn interval_bounds() {
    let (i, j) = (v("i"), v("j"));
    let mut b = Bounds::new();
    b.set_extent(&i, 64);
    b.set_extent(&j, 8);
    assert_eq!(
        bound(&(i.expr().floordiv(8) * 8 + j.expr()), &b),
        Some((0, 63))
    );
    assert_eq!(bound(&(i.expr() - j.expr() * 3), &b), Some((-21, 63)));
    assert_eq!(bound(&i.expr().floormod(5), &b), Some((0, 4)));
    assert_eq!(bound(&(v("free").expr() + 1), &b), None);
}

#[test]
fn floats_fold_only_constants() {
    let x = Var::new("x", DType::F32);
    let e = x.expr() * 1.0f32 + (Expr::f32(2.0) * Expr::f32(3.0));
    assert_eq!(simplify(&e).to_string(), "x * T.float32(1) + T.float32(6)");
}

#[test]
fn flattened_indices_fold_through_nested_divisions() {
    // An NHWC offset taken apart into (n, oh, ow) and put back together: i // 784 * 100352
    // + i // 28 % 28 * 3584 + i % 28 * 128 is i * 128 (784 = 28 * 28, 3584 = 28 * 128).
    let i = v("i");
    let e = i.expr().floordiv(784) * 100352
        + i.expr().floordiv(28).floormod(28) * 3584
        + i.expr().floormod(28) * 128
        + 5;
    assert_eq!(fold_flattened(&simplify(&e)).to_string(), "i * 128 + 5");
    // C's truncating operators (what lowering writes for non-negative operands) too.
    let t = |x: Expr, op: BinOp, c: i64| Expr::Binary(op, Box::new(x), Box::new(Expr::int(c)));
    let e = t(i.expr(), BinOp::Div, 384) * 49152
        + t(t(i.expr(), BinOp::Div, 128), BinOp::Mod, 3) * 16384
        + t(i.expr(), BinOp::Mod, 128) * 128;
    assert_eq!(fold_flattened(&simplify(&e)).to_string(), "i * 128");
    // Coefficients that do not match stay: an im2col's window offset is not a reshape.
    let e = i.expr().floordiv(48) * 3584 + i.expr().floordiv(16).floormod(3) * 128;
    assert_eq!(
        fold_flattened(&simplify(&e)).to_string(),
        "i // 48 * 3584 + i // 16 % 3 * 128"
    );
    // A floor quotient never pairs with a truncating remainder.
    let e = i.expr().floordiv(4) * 8 + t(i.expr(), BinOp::Mod, 4) * 2;
    assert_eq!(
        fold_flattened(&simplify(&e)).to_string(),
        "i // 4 * 8 + i % 4 * 2"
    );
}

/// `e` at `i = x` (integer sums, products, floor and truncating division only).
fn eval(e: &Expr, x: i64) -> i64 {
    match e {
        Expr::Int(v, _) => *v,
        Expr::Var(_) => x,
        Expr::Unary(_, a) => -eval(a, x),
        Expr::Binary(op, a, b) => {
            let (a, b) = (eval(a, x), eval(b, x));
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::FloorDiv => a.div_euclid(b),
                BinOp::FloorMod => a.rem_euclid(b),
                BinOp::Div => a / b,
                BinOp::Mod => a % b,
                _ => panic!("{op:?}"),
            }
        }
        _ => panic!("{e}"),
    }
}

#[test]
fn folded_indices_keep_their_value_at_any_sign() {
    let i = v("i");
    let t = |x: Expr, op: BinOp, c: i64| Expr::Binary(op, Box::new(x), Box::new(Expr::int(c)));
    let cases = [
        // Floor pairs, nested, with an offset and an unrelated term left alone.
        i.expr().floordiv(784) * 100352
            + i.expr().floordiv(28).floormod(28) * 3584
            + i.expr().floormod(28) * 128
            + i.expr().floordiv(5) * 7
            - 3712,
        // Truncating pairs (C's `/` and `%`), negative operands included.
        t(i.expr(), BinOp::Div, 384) * 49152
            + t(t(i.expr(), BinOp::Div, 128), BinOp::Mod, 3) * 16384
            + t(i.expr(), BinOp::Mod, 128) * 128
            + 9,
    ];
    for e in cases {
        let folded = fold_flattened(&e);
        assert_ne!(folded, e, "nothing folded in {e}");
        for x in -2000..2000 {
            assert_eq!(eval(&folded, x), eval(&e, x), "{e} -> {folded} at i = {x}");
        }
    }
}

/// A clamped index `min(4·c + base, bound)` is a multiple of 4 when the index and the
/// bound are (the matmul template's clamped vector loads rely on it), and known only
/// modulo what the two share otherwise.
#[test]
fn min_and_max_keep_the_residue_both_sides_share() {
    use weft_ir::arith::modular;
    let (c, n0) = (v("c"), v("n0"));
    let mut b = Bounds::new();
    b.set_extent(&c, 32);
    b.set_extent(&n0, 1000);
    let index = c.expr() * 4 + n0.expr() * 128;
    assert_eq!(modular(&index.clone().min(996), &b), (4, 0));
    assert_eq!(modular(&index.clone().max(996), &b), (4, 0));
    // 997 is 1 modulo 4: nothing is known.
    assert_eq!(modular(&index.clone().min(997), &b), (1, 0));
    // 998 shares 2 with any multiple of 4: even.
    assert_eq!(modular(&index.min(998), &b), (2, 0));
    assert_eq!(modular(&Expr::int(8).min(8), &b), (0, 8));
}
