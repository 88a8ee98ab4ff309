//! Expressions in TVMScript spelling, and `Display` for [`Expr`].

use std::fmt;

use crate::dtype::DType;
use crate::expr::{BinOp, Expr, UnOp};

fn prec(e: &Expr) -> u8 {
    match e {
        Expr::Binary(op, ..) => match op {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::Mod | BinOp::FloorDiv | BinOp::FloorMod => 6,
            BinOp::Min | BinOp::Max => 9,
        },
        Expr::Unary(UnOp::Not, _) => 3,
        Expr::Unary(UnOp::Neg, _) => 7,
        Expr::Int(v, _) if *v < 0 => 7,
        Expr::Float(v, _) if *v < 0.0 => 7,
        _ => 9,
    }
}

fn float_lit(v: f64, d: DType) -> String {
    let s = if v.is_infinite() {
        if v > 0.0 {
            "T.inf".to_string()
        } else {
            "-T.inf".to_string()
        }
    } else if v.is_nan() {
        "T.nan".to_string()
    } else if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    };
    format!("T.{}({})", d.tvm_name(), s)
}

/// Writes `e` as TVMScript.
pub fn write_expr(e: &Expr, out: &mut String) {
    let child = |c: &Expr, min_prec: u8, out: &mut String| {
        if prec(c) < min_prec {
            out.push('(');
            write_expr(c, out);
            out.push(')');
        } else {
            write_expr(c, out);
        }
    };
    match e {
        Expr::Int(v, DType::I32) => out.push_str(&v.to_string()),
        Expr::Int(v, d) => out.push_str(&format!("T.{}({})", d.tvm_name(), v)),
        Expr::Float(v, d) => out.push_str(&float_lit(*v, *d)),
        Expr::Bool(v) => out.push_str(if *v { "T.bool(True)" } else { "T.bool(False)" }),
        Expr::Var(v) => out.push_str(v.name()),
        Expr::Builtin(a) => out.push_str(a.var_name()),
        Expr::Binary(op, a, b) => {
            let sym = match op {
                BinOp::Add => " + ",
                BinOp::Sub => " - ",
                BinOp::Mul => " * ",
                BinOp::Div if a.dtype().is_float() => " / ",
                BinOp::Div | BinOp::FloorDiv => " // ",
                BinOp::Mod | BinOp::FloorMod => " % ",
                BinOp::Eq => " == ",
                BinOp::Ne => " != ",
                BinOp::Lt => " < ",
                BinOp::Le => " <= ",
                BinOp::Gt => " > ",
                BinOp::Ge => " >= ",
                BinOp::And => " and ",
                BinOp::Or => " or ",
                BinOp::Min | BinOp::Max => {
                    out.push_str(if *op == BinOp::Min {
                        "T.min("
                    } else {
                        "T.max("
                    });
                    write_expr(a, out);
                    out.push_str(", ");
                    write_expr(b, out);
                    out.push(')');
                    return;
                }
            };
            let p = prec(e);
            // Left-associative: the right operand needs parentheses at equal precedence,
            // except for the associative + chains and `and`/`or` chains.
            let right_min = match op {
                BinOp::Add | BinOp::And | BinOp::Or => p,
                _ => p + 1,
            };
            let left_min = if op.is_comparison() { p + 1 } else { p };
            child(a, left_min, out);
            out.push_str(sym);
            child(b, right_min, out);
        }
        Expr::Unary(UnOp::Neg, a) => {
            out.push('-');
            child(a, 8, out);
        }
        Expr::Unary(UnOp::Not, a) => {
            out.push_str("not ");
            child(a, 3, out);
        }
        Expr::Cast(d, a) => {
            out.push_str(&format!("T.Cast(\"{}\", ", d.tvm_name()));
            write_expr(a, out);
            out.push(')');
        }
        Expr::Select(c, t, f) => {
            out.push_str("T.if_then_else(");
            write_expr(c, out);
            out.push_str(", ");
            write_expr(t, out);
            out.push_str(", ");
            write_expr(f, out);
            out.push(')');
        }
        Expr::Call(i, args) => {
            out.push_str("T.");
            out.push_str(i.name());
            out.push('(');
            for (k, a) in args.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                write_expr(a, out);
            }
            out.push(')');
        }
        Expr::Load {
            buffer,
            indices,
            lanes,
        } => {
            out.push_str(buffer.name());
            out.push('[');
            for (k, a) in indices.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                write_expr(a, out);
            }
            if *lanes > 1 {
                out.push(':');
                if let Some(i) = indices.first() {
                    write_expr(&(i.clone() + Expr::int(*lanes as i64)), out);
                }
            }
            out.push(']');
        }
        Expr::Reduce(r) => {
            out.push_str(&format!("T.{}(", r.op.name()));
            write_expr(&r.source, out);
            out.push_str(", axis=[");
            for (k, a) in r.axes.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                out.push_str(a.var.name());
            }
            out.push_str("])");
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&super::expr_to_string(self))
    }
}
