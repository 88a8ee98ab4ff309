//! Building expressions: literal coercion, conversions and operator overloading.

use super::{BinOp, Expr, IterVar, UnOp, Var};
use crate::dtype::DType;

pub(super) fn coerce_literals(a: Expr, b: Expr) -> (Expr, Expr) {
    fn retype(lit: &Expr, to: DType) -> Option<Expr> {
        match (lit, to) {
            (Expr::Float(v, _), d) if d.is_float() => Some(Expr::Float(*v, d)),
            (Expr::Int(v, _), d) if d.is_int() => Some(Expr::Int(*v, d)),
            (Expr::Int(v, _), d) if d.is_float() => Some(Expr::Float(*v as f64, d)),
            _ => None,
        }
    }
    let (da, db) = (a.dtype(), b.dtype());
    if da == db {
        return (a, b);
    }
    if a.is_const()
        && !b.is_const()
        && let Some(a2) = retype(&a, db)
    {
        return (a2, b);
    }
    if b.is_const()
        && !a.is_const()
        && let Some(b2) = retype(&b, da)
    {
        return (a, b2);
    }
    (a, b)
}

impl From<i64> for Expr {
    fn from(v: i64) -> Expr {
        Expr::int(v)
    }
}
impl From<i32> for Expr {
    fn from(v: i32) -> Expr {
        Expr::int(v as i64)
    }
}
impl From<f32> for Expr {
    fn from(v: f32) -> Expr {
        Expr::f32(v)
    }
}
impl From<bool> for Expr {
    fn from(v: bool) -> Expr {
        Expr::Bool(v)
    }
}
impl From<&Var> for Expr {
    fn from(v: &Var) -> Expr {
        v.expr()
    }
}
impl From<Var> for Expr {
    fn from(v: Var) -> Expr {
        Expr::Var(v)
    }
}
impl From<&IterVar> for Expr {
    fn from(v: &IterVar) -> Expr {
        v.expr()
    }
}
impl From<&Expr> for Expr {
    fn from(v: &Expr) -> Expr {
        v.clone()
    }
}

macro_rules! arith_op {
    ($trait:ident, $method:ident, $int_op:expr, $float_op:expr) => {
        impl<R: Into<Expr>> std::ops::$trait<R> for Expr {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                let rhs = rhs.into();
                let op = if self.dtype().is_float() || rhs.dtype().is_float() {
                    $float_op
                } else {
                    $int_op
                };
                Expr::binary(op, self, rhs)
            }
        }
        impl<R: Into<Expr>> std::ops::$trait<R> for &Expr {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                std::ops::$trait::$method(self.clone(), rhs)
            }
        }
        impl<R: Into<Expr>> std::ops::$trait<R> for &Var {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                std::ops::$trait::$method(self.expr(), rhs)
            }
        }
        impl<R: Into<Expr>> std::ops::$trait<R> for &IterVar {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                std::ops::$trait::$method(self.expr(), rhs)
            }
        }
    };
}

arith_op!(Add, add, BinOp::Add, BinOp::Add);
arith_op!(Sub, sub, BinOp::Sub, BinOp::Sub);
arith_op!(Mul, mul, BinOp::Mul, BinOp::Mul);
// Integer `/` and `%` are floor division and modulo, as in TVM's `//` and `%`.
arith_op!(Div, div, BinOp::FloorDiv, BinOp::Div);
arith_op!(Rem, rem, BinOp::FloorMod, BinOp::Mod);

impl std::ops::Not for Expr {
    type Output = Expr;
    /// Logical negation of a bool expression.
    fn not(self) -> Expr {
        Expr::Unary(UnOp::Not, Box::new(self))
    }
}

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Unary(UnOp::Neg, Box::new(self))
    }
}
