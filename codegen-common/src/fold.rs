//! Constant folding for emitters that substitute constants themselves (WGSL unrolls
//! loops by copying bodies with the loop variable replaced by each value), so that a local
//! array is indexed by a literal (`acc[13]`, not `acc[1 * 8 + 5]`).
//!
//! Only integer and boolean constants fold, with the semantics of the emitted languages:
//! `Div`/`Mod` truncate (lowering guarantees they only meet non-negative operands or an
//! explicit floor form); results outside their type's range are left unfolded. Floats
//! never fold: rounding is the target's business.

use std::collections::HashMap;

use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Expr, UnOp, Var};

/// `e` with integer and boolean constant sub-expressions folded.
pub fn fold(e: &Expr) -> Expr {
    e.rewrite(&mut fold_node)
}

/// `e` with each variable of `consts` replaced by its value, then folded.
pub fn substitute_consts(e: &Expr, consts: &HashMap<Var, i64>) -> Expr {
    if consts.is_empty() {
        return e.clone();
    }
    e.rewrite(&mut |node| match node {
        Expr::Var(v) => match consts.get(&v) {
            Some(value) => Expr::Int(*value, v.dtype()),
            None => Expr::Var(v),
        },
        other => fold_node(other),
    })
}

fn in_range(v: i64, d: DType) -> bool {
    match d {
        DType::I32 => i32::try_from(v).is_ok(),
        DType::U32 => u32::try_from(v).is_ok(),
        _ => false,
    }
}

fn int_op(op: BinOp, x: i64, y: i64, d: DType) -> Option<Expr> {
    let int = |v: Option<i64>| v.filter(|v| in_range(*v, d)).map(|v| Expr::Int(v, d));
    match op {
        BinOp::Add => int(x.checked_add(y)),
        BinOp::Sub => int(x.checked_sub(y)),
        BinOp::Mul => int(x.checked_mul(y)),
        // Rust's `/` and `%` on integers truncate, as C's and WGSL's do.
        BinOp::Div if y != 0 => int(x.checked_div(y)),
        BinOp::Mod if y != 0 => int(x.checked_rem(y)),
        BinOp::Min => int(Some(x.min(y))),
        BinOp::Max => int(Some(x.max(y))),
        BinOp::Eq => Some(Expr::Bool(x == y)),
        BinOp::Ne => Some(Expr::Bool(x != y)),
        BinOp::Lt => Some(Expr::Bool(x < y)),
        BinOp::Le => Some(Expr::Bool(x <= y)),
        BinOp::Gt => Some(Expr::Bool(x > y)),
        BinOp::Ge => Some(Expr::Bool(x >= y)),
        _ => None,
    }
}

fn fold_node(e: Expr) -> Expr {
    match e {
        Expr::Binary(op, a, b) => {
            let folded = match (op, &*a, &*b) {
                (op, Expr::Int(x, d), Expr::Int(y, _)) => int_op(op, *x, *y, *d),
                (BinOp::And, Expr::Bool(x), Expr::Bool(y)) => Some(Expr::Bool(*x && *y)),
                (BinOp::Or, Expr::Bool(x), Expr::Bool(y)) => Some(Expr::Bool(*x || *y)),
                (BinOp::And, Expr::Bool(true), _) => Some((*b).clone()),
                (BinOp::And, _, Expr::Bool(true)) => Some((*a).clone()),
                (BinOp::Or, Expr::Bool(false), _) => Some((*b).clone()),
                (BinOp::Or, _, Expr::Bool(false)) => Some((*a).clone()),
                (BinOp::Add, Expr::Int(0, _), _) => Some((*b).clone()),
                (BinOp::Add | BinOp::Sub, _, Expr::Int(0, _)) => Some((*a).clone()),
                (BinOp::Mul, Expr::Int(1, _), _) => Some((*b).clone()),
                (BinOp::Mul | BinOp::Div, _, Expr::Int(1, _)) => Some((*a).clone()),
                // Dropping the other operand is sound: expressions have no side effects.
                (BinOp::Mul, Expr::Int(0, d), _) | (BinOp::Mul, _, Expr::Int(0, d)) => {
                    Some(Expr::Int(0, *d))
                }
                _ => None,
            };
            folded.unwrap_or(Expr::Binary(op, a, b))
        }
        Expr::Unary(UnOp::Not, a) => match *a {
            Expr::Bool(x) => Expr::Bool(!x),
            a => Expr::Unary(UnOp::Not, Box::new(a)),
        },
        Expr::Unary(UnOp::Neg, a) => match *a {
            Expr::Int(x, d) if d == DType::I32 && in_range(-x, d) => Expr::Int(-x, d),
            a => Expr::Unary(UnOp::Neg, Box::new(a)),
        },
        Expr::Select(c, t, f) => match *c {
            Expr::Bool(true) => *t,
            Expr::Bool(false) => *f,
            c => Expr::Select(Box::new(c), t, f),
        },
        Expr::Cast(to, a) => match *a {
            Expr::Int(v, _) if to.is_int() && in_range(v, to) => Expr::Int(v, to),
            a => Expr::Cast(to, Box::new(a)),
        },
        e => e,
    }
}

/// `e / n` written without a division when `e` is visibly a multiple of `n` (a multiple
/// literal, a product with such a literal, or a sum or difference of multiples). `None`
/// when it is not visible; the caller then writes a division (exact all the same where
/// the lowering contract says `e` is a multiple of `n`).
pub fn div_exact(e: &Expr, n: i64) -> Option<Expr> {
    if n == 0 {
        return None;
    }
    match e {
        Expr::Int(v, d) if v % n == 0 => Some(Expr::Int(v / n, *d)),
        Expr::Binary(BinOp::Mul, a, b) => match (&**a, &**b) {
            (x, Expr::Int(c, d)) | (Expr::Int(c, d), x) if c % n == 0 => Some(fold(&Expr::Binary(
                BinOp::Mul,
                Box::new(x.clone()),
                Box::new(Expr::Int(c / n, *d)),
            ))),
            _ => None,
        },
        Expr::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
            let (a, b) = (div_exact(a, n)?, div_exact(b, n)?);
            Some(fold(&Expr::Binary(*op, Box::new(a), Box::new(b))))
        }
        _ => None,
    }
}

/// `kernel` with its flattened indices folded back together
/// ([`weft_ir::arith::fold_flattened`]: an im2col's `i // 784 * 100352 + i // 28 % 28 *
/// 3584 + i % 28 * 128` is `i * 128`). Every emitter writes this form; the bounds prover
/// has seen the unfolded one, which has the same value everywhere.
pub fn fold_indices(kernel: &weft_ir::kernel::Kernel) -> weft_ir::kernel::Kernel {
    weft_ir::kernel::Kernel {
        body: kernel.body.map_exprs(&mut weft_ir::arith::fold_flattened),
        ..kernel.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_unrolled_indices() {
        let i = Var::index("i");
        let j = Var::index("j");
        let e = i.expr() * 8 + j.expr();
        let consts = HashMap::from([(i.clone(), 1), (j.clone(), 5)]);
        assert_eq!(substitute_consts(&e, &consts), Expr::int(13));
        let partial = HashMap::from([(i, 0)]);
        assert_eq!(substitute_consts(&e, &partial), j.expr());
    }

    #[test]
    fn leaves_overflow_and_division_by_zero() {
        let big = Expr::binary(BinOp::Mul, Expr::int(1 << 20), Expr::int(1 << 20));
        assert_eq!(fold(&big), big);
        let div0 = Expr::binary(BinOp::Div, Expr::int(1), Expr::int(0));
        assert_eq!(fold(&div0), div0);
    }

    #[test]
    fn div_exact_distributes_over_multiples() {
        let t = Var::index("t");
        let e = t.expr() * 8 + 16;
        assert_eq!(div_exact(&e, 4), Some(t.expr() * 2 + 4));
        assert_eq!(div_exact(&(t.expr() * 4), 4), Some(t.expr()));
        assert_eq!(div_exact(&(t.expr() + 1), 4), None);
    }
}
