//! WGSL expressions: literals, operators, conversions and built-in functions, with WGSL's
//! typing rules (no implicit conversions, suffixed literals, no unary minus on `u32`).

use weft_codegen_common::contract::{contains_load, expand_sigmoid};
use weft_codegen_common::names::NameKey;
use weft_codegen_common::prec::{Prec, binop_prec, needs_parens};
use weft_codegen_common::{EmitError, UnloweredNode, float_text};
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Expr, Intrinsic, UnOp};

use crate::BACKEND;
use crate::writer::{Writer, ty};

/// WGSL's built-in for each intrinsic (all take `f32` or `f16`; `abs` also integers).
fn builtin_fn(f: Intrinsic) -> Option<&'static str> {
    Some(match f {
        Intrinsic::Exp => "exp",
        Intrinsic::Exp2 => "exp2",
        Intrinsic::Log => "log",
        Intrinsic::Sqrt => "sqrt",
        Intrinsic::Rsqrt => "inverseSqrt",
        Intrinsic::Tanh | Intrinsic::TanhApprox => "tanh",
        Intrinsic::Sin => "sin",
        Intrinsic::Cos => "cos",
        Intrinsic::Abs => "abs",
        Intrinsic::Floor => "floor",
        Intrinsic::Ceil => "ceil",
        Intrinsic::Pow => "pow",
        Intrinsic::Fma => "fma",
        // Expanded before lookup (`contract::expand_sigmoid`); the shuffle is written
        // apart (its mask is a `u32`).
        Intrinsic::Sigmoid | Intrinsic::ShuffleXor => return None,
    })
}

impl Writer<'_> {
    pub(crate) fn unsupported(&self, what: String) -> EmitError {
        EmitError::Unsupported {
            kernel: self.kernel.name.clone(),
            backend: BACKEND,
            what,
        }
    }

    pub(crate) fn int_literal(&self, v: i64, d: DType) -> Result<(String, Prec), EmitError> {
        match d {
            DType::I32 if v == i32::MIN as i64 => Ok(("(-2147483647 - 1)".into(), Prec::Atom)),
            DType::I32 if i32::try_from(v).is_ok() => {
                Ok((v.to_string(), if v < 0 { Prec::Neg } else { Prec::Atom }))
            }
            DType::U32 if u32::try_from(v).is_ok() => Ok((format!("{v}u"), Prec::Atom)),
            DType::F32 | DType::F16 => Ok(float_literal(v as f64, d)),
            _ => Err(self.invalid(format!("integer literal {v} does not fit {d}"))),
        }
    }

    /// `e` as WGSL with its precedence. `e` holds no select that needs hoisting.
    pub(crate) fn expr(&self, e: &Expr) -> Result<(String, Prec), EmitError> {
        let wrap = |(s, p): (String, Prec), parent: Prec, right: bool| {
            if needs_parens(parent, p, right) {
                format!("({s})")
            } else {
                s
            }
        };
        let unlowered = |node| EmitError::Unlowered {
            kernel: self.kernel.name.clone(),
            node,
            detail: e.to_string(),
        };
        Ok(match e {
            Expr::Int(v, d) => self.int_literal(*v, *d)?,
            Expr::Float(v, d) => float_literal(*v, *d),
            Expr::Bool(b) => ((if *b { "true" } else { "false" }).into(), Prec::Atom),
            Expr::Var(v) => {
                let name = self.namer.get(NameKey::Var(v.id())).ok_or_else(|| {
                    self.invalid(format!("`{}` is used outside its scope", v.name()))
                })?;
                (name.to_string(), Prec::Atom)
            }
            Expr::Builtin(a) => {
                let name = self
                    .namer
                    .get(NameKey::Builtin(*a))
                    .ok_or_else(|| self.invalid(format!("{a} is not declared")))?;
                (name.to_string(), Prec::Atom)
            }
            Expr::Binary(op, a, b) => {
                let d = a.dtype();
                let (sa, sb) = (self.expr(a)?, self.expr(b)?);
                let sym = match op {
                    BinOp::Min | BinOp::Max => {
                        if d == DType::Bool {
                            return Err(self.unsupported(format!("{op:?} of booleans")));
                        }
                        let f = if *op == BinOp::Min { "min" } else { "max" };
                        return Ok((format!("{f}({}, {})", sa.0, sb.0), Prec::Atom));
                    }
                    BinOp::And | BinOp::Or
                        if self.eager_logic && !contains_load(a) && !contains_load(b) =>
                    {
                        // Both evaluated, no branch (`crate::index`). WGSL's `&` and `|`
                        // take unary expressions: anything else in parentheses; and no
                        // other operator takes them unparenthesised, which the lowest
                        // precedence gives.
                        let operand = |(s, p): (String, Prec)| match p {
                            Prec::Atom | Prec::Prefix => s,
                            _ => format!("({s})"),
                        };
                        let sym = if *op == BinOp::And { "&" } else { "|" };
                        return Ok((
                            format!("{} {sym} {}", operand(sa), operand(sb)),
                            Prec::Ternary,
                        ));
                    }
                    BinOp::FloorDiv => return Err(unlowered(UnloweredNode::FloorDiv)),
                    BinOp::FloorMod => return Err(unlowered(UnloweredNode::FloorMod)),
                    _ => match weft_codegen_common::prec::infix_symbol(*op) {
                        Some(sym) => sym,
                        None => return Err(unlowered(UnloweredNode::FloorDiv)),
                    },
                };
                let p = binop_prec(*op);
                (
                    format!("{} {sym} {}", wrap(sa, p, false), wrap(sb, p, true)),
                    p,
                )
            }
            Expr::Unary(UnOp::Neg, a) => {
                let inner = wrap(self.expr(a)?, Prec::Neg, true);
                if a.dtype() == DType::U32 {
                    // WGSL has no unary minus on u32; `0u - x` wraps as C's does.
                    (format!("0u - {inner}"), Prec::Additive)
                } else {
                    (format!("-{inner}"), Prec::Neg)
                }
            }
            Expr::Unary(UnOp::Not, a) => (
                format!("!{}", wrap(self.expr(a)?, Prec::Prefix, false)),
                Prec::Prefix,
            ),
            Expr::Cast(to, a) => {
                let inner = self.expr(a)?;
                if a.dtype() == *to {
                    inner
                } else {
                    (format!("{}({})", ty(*to), inner.0), Prec::Atom)
                }
            }
            // Only selects with no load in a branch reach here (the rest were hoisted), so
            // evaluating both operands is harmless.
            Expr::Select(c, t, f) => (
                format!(
                    "select({}, {}, {})",
                    self.expr(f)?.0,
                    self.expr(t)?.0,
                    self.expr(c)?.0
                ),
                Prec::Atom,
            ),
            Expr::Call(f, args) => {
                if args.len() != f.arity() {
                    return Err(self.invalid(format!(
                        "{} takes {} arguments, not {}",
                        f.name(),
                        f.arity(),
                        args.len()
                    )));
                }
                let expanded = expand_sigmoid(e);
                if &expanded != e {
                    return self.expr(&expanded);
                }
                let d = args[0].dtype();
                if *f == Intrinsic::ShuffleXor {
                    // naga takes subgroup functions without `enable subgroups;` (it
                    // refuses the directive, wgpu#8202); Tint needs it (tests/tint adds it).
                    let (Expr::Int(mask, _), true) =
                        (&args[1], matches!(d, DType::F32 | DType::I32 | DType::U32))
                    else {
                        return Err(self.unsupported(format!(
                            "shuffle_xor on {d} with mask `{}`",
                            weft_ir::printer::expr_to_string(&args[1])
                        )));
                    };
                    let v = self.expr(&args[0])?.0;
                    return Ok((format!("subgroupShuffleXor({v}, {mask}u)"), Prec::Atom));
                }
                let name = builtin_fn(*f)
                    .filter(|_| d.is_float() || (*f == Intrinsic::Abs && d.is_int()))
                    .ok_or_else(|| self.unsupported(format!("{} on {d}", f.name())))?;
                let texts = args
                    .iter()
                    .map(|a| self.expr(a).map(|x| x.0))
                    .collect::<Result<Vec<_>, _>>()?;
                (format!("{name}({})", texts.join(", ")), Prec::Atom)
            }
            Expr::Load {
                buffer,
                indices,
                lanes,
            } => {
                if *lanes != 1 {
                    return Err(self.invalid(format!(
                        "a {lanes}-lane load of `{}` outside a vector store",
                        buffer.name()
                    )));
                }
                if indices.len() != 1 {
                    return Err(unlowered(UnloweredNode::MultiIndexLoad));
                }
                let idx = self.expr(&indices[0])?.0;
                let text = format!("{}[{idx}]", self.buffer_name(buffer)?);
                if weft_codegen_common::stored_as_word(buffer) {
                    (format!("({text} != 0u)"), Prec::Atom)
                } else {
                    (text, Prec::Atom)
                }
            }
            Expr::Reduce(_) => return Err(unlowered(UnloweredNode::Reduce)),
        })
    }
}

/// `1.5f`, `0.5h`; infinities and NaN by bit pattern (WGSL has no literal for them).
fn float_literal(v: f64, d: DType) -> (String, Prec) {
    let suffix = if d == DType::F16 { "h" } else { "f" };
    let s = match float_text(v, d) {
        Some(t) => format!("{t}{suffix}"),
        None => {
            let bits = if v.is_nan() {
                "0x7fc00000u"
            } else if v > 0.0 {
                "0x7f800000u"
            } else {
                "0xff800000u"
            };
            let f = format!("bitcast<f32>({bits})");
            return if d == DType::F16 {
                (format!("f16({f})"), Prec::Atom)
            } else {
                (f, Prec::Atom)
            };
        }
    };
    let p = if s.starts_with('-') {
        Prec::Neg
    } else {
        Prec::Atom
    };
    (s, p)
}
