//! The one path for ONNX's elementwise ops: each unary and binary function with its
//! attributes and their defaults, as a weft [`Op`].

use weft_graph::op::{Binary, Op, Unary};

use super::attrs::Attrs;
use crate::error::ImportError;

/// The weft op of an ONNX elementwise op with its attributes, `None` for other ops: the
/// one path for every unary and binary function.
pub(super) fn elementwise(op: &str, a: &Attrs) -> Result<Option<Op>, ImportError> {
    let u = |f: Unary| Ok(Some(Op::Unary(f)));
    let b = |f: Binary| Ok(Some(Op::Binary(f)));
    match op {
        "Relu" => u(Unary::Relu),
        "Sigmoid" => u(Unary::Sigmoid),
        "Tanh" => u(Unary::Tanh),
        "Exp" => u(Unary::Exp),
        "Log" => u(Unary::Log),
        "Sqrt" => u(Unary::Sqrt),
        "Abs" => u(Unary::Abs),
        "Neg" => u(Unary::Neg),
        "Reciprocal" => u(Unary::Reciprocal),
        "Floor" => u(Unary::Floor),
        "Ceil" => u(Unary::Ceil),
        "Erf" => u(Unary::Erf),
        "Sin" => u(Unary::Sin),
        "Cos" => u(Unary::Cos),
        "Tan" => u(Unary::Tan),
        "Asin" => u(Unary::Asin),
        "Acos" => u(Unary::Acos),
        "Atan" => u(Unary::Atan),
        "Sinh" => u(Unary::Sinh),
        "Cosh" => u(Unary::Cosh),
        "Asinh" => u(Unary::Asinh),
        "Acosh" => u(Unary::Acosh),
        "Atanh" => u(Unary::Atanh),
        "Softplus" => u(Unary::Softplus),
        "Softsign" => u(Unary::Softsign),
        "Sign" => u(Unary::Sign),
        "Round" => u(Unary::Round),
        "Mish" => u(Unary::Mish),
        "HardSwish" => u(Unary::HardSwish),
        "HardSigmoid" => u(Unary::HardSigmoid {
            alpha: a.float("alpha", 0.2)?,
            beta: a.float("beta", 0.5)?,
        }),
        "LeakyRelu" => u(Unary::LeakyRelu {
            alpha: a.float("alpha", 0.01)?,
        }),
        "Elu" => u(Unary::Elu {
            alpha: a.float("alpha", 1.0)?,
        }),
        "Selu" => u(Unary::Selu {
            alpha: a.float("alpha", 1.673_263_2)?,
            gamma: a.float("gamma", 1.050_701)?,
        }),
        "Celu" => u(Unary::Celu {
            alpha: a.float("alpha", 1.0)?,
        }),
        "ThresholdedRelu" => u(Unary::ThresholdedRelu {
            alpha: a.float("alpha", 1.0)?,
        }),
        "Gelu" => match a.string("approximate", "none")?.as_str() {
            "none" => u(Unary::Gelu { tanh: false }),
            "tanh" => u(Unary::Gelu { tanh: true }),
            other => Err(a.err("approximate", format!("`{other}` is not `none` or `tanh`"))),
        },
        "Add" => b(Binary::Add),
        "Sub" => b(Binary::Sub),
        "Mul" => b(Binary::Mul),
        "Div" => b(Binary::Div),
        "Pow" => b(Binary::Pow),
        "PRelu" => b(Binary::PRelu),
        "Equal" => b(Binary::Equal),
        "Less" => b(Binary::Less),
        "LessOrEqual" => b(Binary::LessOrEqual),
        "Greater" => b(Binary::Greater),
        "GreaterOrEqual" => b(Binary::GreaterOrEqual),
        "And" => b(Binary::And),
        "Or" => b(Binary::Or),
        "Xor" => b(Binary::Xor),
        "Not" => u(Unary::Not),
        _ => Ok(None),
    }
}
