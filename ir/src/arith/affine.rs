//! Linear forms over atoms.

use crate::dtype::DType;
use crate::expr::{BinOp, Expr, UnOp};

/// `sum(coef * atom) + constant` over `i32` atoms. An atom is any integer expression that
/// is not itself a sum, difference, negation or product with a constant (a variable, a
/// thread index, a floor division, a product of two variables...). Terms keep the order in
/// which their atoms first appear, so a canonical form prints close to its source.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Affine {
    pub terms: Vec<(Expr, i64)>,
    pub constant: i64,
}

impl Affine {
    /// The constant `c`.
    pub fn constant(c: i64) -> Affine {
        Affine {
            terms: Vec::new(),
            constant: c,
        }
    }

    /// Flattens sums, differences, negations and products with constants of `e`.
    pub fn from_expr(e: &Expr) -> Affine {
        let mut a = Affine::default();
        a.accumulate(e, 1);
        a
    }

    fn accumulate(&mut self, e: &Expr, scale: i64) {
        match e {
            Expr::Int(v, _) => self.constant += v * scale,
            Expr::Binary(BinOp::Add, x, y) if e.dtype() == DType::I32 => {
                self.accumulate(x, scale);
                self.accumulate(y, scale);
            }
            Expr::Binary(BinOp::Sub, x, y) if e.dtype() == DType::I32 => {
                self.accumulate(x, scale);
                self.accumulate(y, -scale);
            }
            Expr::Unary(UnOp::Neg, x) if e.dtype() == DType::I32 => self.accumulate(x, -scale),
            Expr::Binary(BinOp::Mul, x, y) if e.dtype() == DType::I32 => {
                if let Some(c) = y.as_int() {
                    self.accumulate(x, scale * c);
                } else if let Some(c) = x.as_int() {
                    self.accumulate(y, scale * c);
                } else {
                    self.add_term(e.clone(), scale);
                }
            }
            _ => self.add_term(e.clone(), scale),
        }
    }

    /// Adds `coef * atom`, merging with an equal atom.
    pub fn add_term(&mut self, atom: Expr, coef: i64) {
        if coef == 0 {
            return;
        }
        if let Some(t) = self.terms.iter_mut().find(|(a, _)| *a == atom) {
            t.1 += coef;
        } else {
            self.terms.push((atom, coef));
        }
        self.terms.retain(|(_, c)| *c != 0);
    }

    /// `self + scale * other`.
    pub fn add_scaled(&mut self, other: &Affine, scale: i64) {
        for (a, c) in &other.terms {
            self.add_term(a.clone(), c * scale);
        }
        self.constant += other.constant * scale;
    }

    /// `self - other`.
    pub fn minus(&self, other: &Affine) -> Affine {
        let mut r = self.clone();
        r.add_scaled(other, -1);
        r
    }

    /// The value, if there are no terms.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// The coefficient of `atom` (0 if absent).
    pub fn coef(&self, atom: &Expr) -> i64 {
        self.terms
            .iter()
            .find(|(a, _)| a == atom)
            .map(|t| t.1)
            .unwrap_or(0)
    }

    /// Back to an expression: `a * 3 + b - c * 2 + 5`.
    pub fn to_expr(&self) -> Expr {
        let term = |a: &Expr, c: i64| -> Expr {
            if c == 1 {
                a.clone()
            } else {
                Expr::Binary(BinOp::Mul, Box::new(a.clone()), Box::new(Expr::int(c)))
            }
        };
        let mut out: Option<Expr> = None;
        for (a, c) in &self.terms {
            out = Some(match out {
                None if *c < 0 => Expr::Unary(UnOp::Neg, Box::new(term(a, -c))),
                None => term(a, *c),
                Some(acc) if *c < 0 => {
                    Expr::Binary(BinOp::Sub, Box::new(acc), Box::new(term(a, -c)))
                }
                Some(acc) => Expr::Binary(BinOp::Add, Box::new(acc), Box::new(term(a, *c))),
            });
        }
        let k = self.constant;
        match out {
            None => Expr::Int(k, DType::I32),
            Some(e) if k > 0 => Expr::Binary(BinOp::Add, Box::new(e), Box::new(Expr::int(k))),
            Some(e) if k < 0 => Expr::Binary(BinOp::Sub, Box::new(e), Box::new(Expr::int(-k))),
            Some(e) => e,
        }
    }
}
