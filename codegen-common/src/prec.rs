//! Operator precedence shared by the C-family and WGSL writers.

use weft_ir::expr::BinOp;

/// Operator precedence (higher binds tighter), used to parenthesise only where needed.
/// The levels are C's; WGSL's operators order the same way where WGSL allows them, and
/// [`needs_parens`] adds the parentheses WGSL requires beyond C.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Prec {
    /// `c ? a : b`
    Ternary = 3,
    /// `||`
    Or = 4,
    /// `&&`
    And = 5,
    /// `==` `!=`
    Equality = 9,
    /// `<` `<=` `>` `>=`
    Relational = 10,
    /// `+` `-`
    Additive = 12,
    /// `*` `/` `%`
    Multiplicative = 13,
    /// `!x` and casts.
    Prefix = 14,
    /// `-x` and negative literals: parenthesised as a right operand (`a - (-1)`).
    Neg = 15,
    /// Literals, names, calls, indexing: never parenthesised.
    Atom = 16,
}

/// The precedence of a binary operator (`min`/`max` are calls: atoms).
pub fn binop_prec(op: BinOp) -> Prec {
    match op {
        BinOp::Or => Prec::Or,
        BinOp::And => Prec::And,
        BinOp::Eq | BinOp::Ne => Prec::Equality,
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => Prec::Relational,
        BinOp::Add | BinOp::Sub => Prec::Additive,
        BinOp::Mul | BinOp::Div | BinOp::Mod | BinOp::FloorDiv | BinOp::FloorMod => {
            Prec::Multiplicative
        }
        BinOp::Min | BinOp::Max => Prec::Atom,
    }
}

/// The infix symbol of a binary operator in C and WGSL; `None` for the operators neither
/// language writes infix (`min`/`max` are calls, floor forms must have been lowered).
pub fn infix_symbol(op: BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        // C's truncating `%`; on floats WGSL's `%` truncates too (C's `fmod`).
        BinOp::Mod => "%",
        BinOp::Eq => "==",
        BinOp::Ne => "!=",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::And => "&&",
        BinOp::Or => "||",
        BinOp::FloorDiv | BinOp::FloorMod | BinOp::Min | BinOp::Max => return None,
    })
}

/// Whether an operand of precedence `child` needs parentheses under a binary operator of
/// precedence `parent`. Beyond what C requires, comparisons inside comparisons and `&&`
/// inside `||` are parenthesised: they read ambiguously (and WGSL forbids them).
pub fn needs_parens(parent: Prec, child: Prec, right: bool) -> bool {
    let comparison = |p| matches!(p, Prec::Equality | Prec::Relational);
    let logical = |p| matches!(p, Prec::And | Prec::Or);
    child < parent
        || (right && child <= parent)
        || (comparison(parent) && comparison(child))
        || (logical(parent) && logical(child) && parent != child)
        || (right && child == Prec::Neg && parent < Prec::Neg)
}
