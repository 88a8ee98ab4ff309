//! The simplifier and bound analysis.

use weft_ir::arith::{Bounds, bound, simplify, simplify_with};
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
