//! Elementwise functions of one input: the activations and math functions ONNX names
//! one op each (Relu, Sigmoid, Erf, Gelu, ...), one weft op with the function as data.

use std::fmt;

use ndarray::ArrayD;
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::inline::truth;
use super::onnx::OnnxOp;
use super::shapes::{arity, float};
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// Elementwise functions of one input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unary {
    Relu,
    Sigmoid,
    Tanh,
    Exp,
    Log,
    Sqrt,
    Abs,
    Neg,
    Reciprocal,
    Floor,
    Ceil,
    Erf,
    Sin,
    Cos,
    Softplus,
    /// `max(0, min(1, alpha·x + beta))`.
    HardSigmoid {
        alpha: f64,
        beta: f64,
    },
    /// `x · max(0, min(1, x/6 + 1/2))`.
    HardSwish,
    /// `x` where positive, else `alpha·x`.
    LeakyRelu {
        alpha: f64,
    },
    /// `x` where positive, else `alpha·(exp(x) − 1)`.
    Elu {
        alpha: f64,
    },
    /// `gamma·x` where positive, else `gamma·alpha·(exp(x) − 1)`.
    Selu {
        alpha: f64,
        gamma: f64,
    },
    /// `max(0, x) + min(0, alpha·(exp(x/alpha) − 1))`.
    Celu {
        alpha: f64,
    },
    /// `x` where `x > alpha`, else 0.
    ThresholdedRelu {
        alpha: f64,
    },
    /// `x / (1 + |x|)`.
    Softsign,
    /// −1, 0 or 1.
    Sign,
    /// To the nearest integer, halves to even (ONNX's Round).
    Round,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    /// `x · tanh(softplus(x))`.
    Mish,
    /// `x · sigmoid(x)` (SiLU, Swish with beta 1): no ONNX op before opset 24's Swish,
    /// so written as the `Mul(x, Sigmoid(x))` exporters write, which
    /// `passes::recognize_activations` makes this op again.
    Silu,
    /// `x · Φ(x)` with the exact normal CDF, or its tanh approximation where `tanh`.
    Gelu {
        tanh: bool,
    },
    /// Logical not of a bool (the only unary op on bool).
    Not,
}

impl Unary {
    /// The function on one float64 value.
    pub fn apply(&self, x: f64) -> f64 {
        match *self {
            Unary::Relu => x.max(0.0),
            Unary::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Unary::Tanh => x.tanh(),
            Unary::Exp => x.exp(),
            Unary::Log => x.ln(),
            Unary::Sqrt => x.sqrt(),
            Unary::Abs => x.abs(),
            Unary::Neg => -x,
            Unary::Reciprocal => 1.0 / x,
            Unary::Floor => x.floor(),
            Unary::Ceil => x.ceil(),
            Unary::Erf => erf(x),
            Unary::Sin => x.sin(),
            Unary::Cos => x.cos(),
            Unary::Softplus => {
                // ln(1 + e^x) without overflow for large x.
                if x > 30.0 { x } else { x.exp().ln_1p() }
            }
            Unary::HardSigmoid { alpha, beta } => (alpha * x + beta).clamp(0.0, 1.0),
            Unary::HardSwish => x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
            Unary::LeakyRelu { alpha } => {
                if x >= 0.0 {
                    x
                } else {
                    alpha * x
                }
            }
            Unary::Elu { alpha } => {
                if x >= 0.0 {
                    x
                } else {
                    alpha * (x.exp() - 1.0)
                }
            }
            Unary::Selu { alpha, gamma } => {
                if x > 0.0 {
                    gamma * x
                } else {
                    gamma * alpha * (x.exp() - 1.0)
                }
            }
            Unary::Celu { alpha } => x.max(0.0) + (alpha * ((x / alpha).exp() - 1.0)).min(0.0),
            Unary::ThresholdedRelu { alpha } => {
                if x > alpha {
                    x
                } else {
                    0.0
                }
            }
            Unary::Softsign => x / (1.0 + x.abs()),
            Unary::Sign => {
                // signum gives ±1 for ±0; ONNX's Sign gives 0 there.
                if x == 0.0 || x.is_nan() {
                    x
                } else {
                    x.signum()
                }
            }
            Unary::Round => x.round_ties_even(),
            Unary::Tan => x.tan(),
            Unary::Asin => x.asin(),
            Unary::Acos => x.acos(),
            Unary::Atan => x.atan(),
            Unary::Sinh => x.sinh(),
            Unary::Cosh => x.cosh(),
            Unary::Asinh => x.asinh(),
            Unary::Acosh => x.acosh(),
            Unary::Atanh => x.atanh(),
            Unary::Mish => x * Unary::Softplus.apply(x).tanh(),
            Unary::Silu => x / (1.0 + (-x).exp()),
            Unary::Gelu { tanh: false } => 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
            Unary::Gelu { tanh: true } => {
                let k = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
            }
            Unary::Not => super::truth(x == 0.0),
        }
    }
}

impl OpDef for Unary {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        x.same()
    }

    fn name(&self) -> &'static str {
        match self {
            Unary::Relu => "Relu",
            Unary::Sigmoid => "Sigmoid",
            Unary::Tanh => "Tanh",
            Unary::Exp => "Exp",
            Unary::Log => "Log",
            Unary::Sqrt => "Sqrt",
            Unary::Abs => "Abs",
            Unary::Neg => "Neg",
            Unary::Reciprocal => "Reciprocal",
            Unary::Floor => "Floor",
            Unary::Ceil => "Ceil",
            Unary::Erf => "Erf",
            Unary::Sin => "Sin",
            Unary::Cos => "Cos",
            Unary::Softplus => "Softplus",
            Unary::HardSigmoid { .. } => "HardSigmoid",
            Unary::HardSwish => "HardSwish",
            Unary::LeakyRelu { .. } => "LeakyRelu",
            Unary::Elu { .. } => "Elu",
            Unary::Selu { .. } => "Selu",
            Unary::Celu { .. } => "Celu",
            Unary::ThresholdedRelu { .. } => "ThresholdedRelu",
            Unary::Softsign => "Softsign",
            Unary::Sign => "Sign",
            Unary::Round => "Round",
            Unary::Tan => "Tan",
            Unary::Asin => "Asin",
            Unary::Acos => "Acos",
            Unary::Atan => "Atan",
            Unary::Sinh => "Sinh",
            Unary::Cosh => "Cosh",
            Unary::Asinh => "Asinh",
            Unary::Acosh => "Acosh",
            Unary::Atanh => "Atanh",
            Unary::Mish => "Mish",
            Unary::Silu => "Silu",
            Unary::Gelu { .. } => "Gelu",
            Unary::Not => "Not",
        }
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unary::HardSigmoid { alpha, beta } => write!(f, "(alpha={alpha}, beta={beta})"),
            Unary::LeakyRelu { alpha }
            | Unary::Elu { alpha }
            | Unary::Celu { alpha }
            | Unary::ThresholdedRelu { alpha } => write!(f, "(alpha={alpha})"),
            Unary::Selu { alpha, gamma } => write!(f, "(alpha={alpha}, gamma={gamma})"),
            Unary::Gelu { tanh: true } => f.write_str("(approximate=tanh)"),
            Unary::Gelu { tanh: false }
            | Unary::Relu
            | Unary::Sigmoid
            | Unary::Tanh
            | Unary::Exp
            | Unary::Log
            | Unary::Sqrt
            | Unary::Abs
            | Unary::Neg
            | Unary::Reciprocal
            | Unary::Floor
            | Unary::Ceil
            | Unary::Erf
            | Unary::Sin
            | Unary::Cos
            | Unary::Softplus
            | Unary::HardSwish
            | Unary::Softsign
            | Unary::Sign
            | Unary::Round
            | Unary::Tan
            | Unary::Asin
            | Unary::Acos
            | Unary::Atan
            | Unary::Sinh
            | Unary::Cosh
            | Unary::Asinh
            | Unary::Acosh
            | Unary::Atanh
            | Unary::Mish
            | Unary::Silu
            | Unary::Not => Ok(()),
        }
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 1)?;
        if *self == Unary::Not {
            if inputs[0].dtype != DType::Bool {
                return Err(format!(
                    "input 0 `{}` is {}, not bool",
                    inputs[0].name, inputs[0].dtype
                ));
            }
            return Ok((inputs[0].shape.clone(), DType::Bool));
        }
        // Sign, Abs and Neg take integers too (ONNX's types; DeBERTa's relative positions
        // take the Sign of an int64 constant): exact in the f32 a kernel computes in for
        // magnitudes below 2²⁴, which a position or an index is.
        if !(matches!(self, Unary::Sign | Unary::Abs | Unary::Neg) && inputs[0].dtype == DType::I32)
        {
            float(inputs[0], 0)?;
        }
        Ok((inputs[0].shape.clone(), inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        x[0].mapv(|v| self.apply(v))
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Pointwise)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let half = x.output().dtype == DType::F16;
        Some(unary(*self, x.input(0, idx), half))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        match *self {
            Unary::HardSigmoid { alpha, beta } => {
                node.float("alpha", alpha);
                node.float("beta", beta);
            }
            Unary::Selu { alpha, gamma } => {
                node.float("alpha", alpha);
                node.float("gamma", gamma);
            }
            Unary::LeakyRelu { alpha }
            | Unary::Elu { alpha }
            | Unary::Celu { alpha }
            | Unary::ThresholdedRelu { alpha } => node.float("alpha", alpha),
            Unary::Gelu { tanh } => {
                if tanh {
                    node.string("approximate", "tanh");
                }
                node.needs_opset(20);
            }
            Unary::Mish => node.needs_opset(18),
            Unary::Silu => node.written_as("Mul", &["Sigmoid"]),
            Unary::Relu
            | Unary::Sigmoid
            | Unary::Tanh
            | Unary::Exp
            | Unary::Log
            | Unary::Sqrt
            | Unary::Abs
            | Unary::Neg
            | Unary::Reciprocal
            | Unary::Floor
            | Unary::Ceil
            | Unary::Erf
            | Unary::Sin
            | Unary::Cos
            | Unary::Softplus
            | Unary::HardSwish
            | Unary::Softsign
            | Unary::Sign
            | Unary::Round
            | Unary::Tan
            | Unary::Asin
            | Unary::Acos
            | Unary::Atan
            | Unary::Sinh
            | Unary::Cosh
            | Unary::Asinh
            | Unary::Acosh
            | Unary::Atanh
            | Unary::Not => {}
        }
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// The error function, to about 1e-15 (Abramowitz–Stegun 7.1.26 is only 1e-7): the
/// series for small |x|, the continued fraction of erfc beyond.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.5 {
        // erf(x) = 2/√π · Σ (−1)ⁿ x^(2n+1) / (n! (2n+1)).
        let mut sum = 0.0f64;
        let mut term = a;
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs().max(1e-300) && n < 200.0 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -a * a / n;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else if a > 6.0 {
        1.0
    } else {
        // erfc(a) = e^(−a²)/√π · 1/(a + 1/2/(a + 1/(a + 3/2/(a + ...)))).
        let mut f = a;
        for k in (1..60).rev() {
            f = a + (k as f64 / 2.0) / f;
        }
        1.0 - (-a * a).exp() / (std::f64::consts::PI.sqrt() * f)
    };
    if x < 0.0 { -r } else { r }
}

/// An elementwise function of one value, in f32. `half`: the result is an f16 tensor, so
/// tanh may be approximated within binary16's precision ([`te::tanh_approx`]: on the H100
/// GPT-2's c_fc with its tanh-GELU epilogue went from 61.8 to 47.9 µs,
/// `docs/wgmma-epilogue.md`).
fn unary(u: Unary, x: Expr, half: bool) -> Expr {
    let f = |v: f64| v as f32;
    let tanh = |x: Expr| {
        if half {
            te::tanh_approx(x)
        } else {
            te::tanh(x)
        }
    };
    match u {
        Unary::Relu => te::maximum(x, 0.0f32),
        Unary::Sigmoid => te::sigmoid(x),
        Unary::Tanh => tanh(x),
        Unary::Exp => te::exp(x),
        Unary::Log => te::log(x),
        Unary::Sqrt => te::sqrt(x),
        Unary::Abs => te::abs(x),
        Unary::Neg => Expr::f32(0.0) - x,
        Unary::Reciprocal => Expr::f32(1.0) / x,
        Unary::Floor => te::floor(x),
        Unary::Ceil => te::ceil(x),
        Unary::Sin => te::sin(x),
        Unary::Cos => te::cos(x),
        Unary::Erf => erf_f32(x, half),
        Unary::Softplus => {
            // ln(1 + e^x), and x itself where e^x would overflow f32.
            te::if_then_else(
                x.clone().gt(20.0f32),
                x.clone(),
                te::log(te::exp(x) + 1.0f32),
            )
        }
        Unary::HardSigmoid { alpha, beta } => {
            te::minimum(te::maximum(x * f(alpha) + f(beta), 0.0f32), 1.0f32)
        }
        Unary::HardSwish => {
            x.clone() * te::minimum(te::maximum(x / 6.0f32 + 0.5f32, 0.0f32), 1.0f32)
        }
        Unary::LeakyRelu { alpha } => {
            te::if_then_else(x.clone().ge(0.0f32), x.clone(), x * f(alpha))
        }
        Unary::Elu { alpha } => te::if_then_else(
            x.clone().ge(0.0f32),
            x.clone(),
            (te::exp(x) - 1.0f32) * f(alpha),
        ),
        Unary::Selu { alpha, gamma } => te::if_then_else(
            x.clone().gt(0.0f32),
            x.clone() * f(gamma),
            (te::exp(x) - 1.0f32) * f(alpha * gamma),
        ),
        Unary::Celu { alpha } => {
            te::maximum(x.clone(), 0.0f32)
                + te::minimum((te::exp(x / f(alpha)) - 1.0f32) * f(alpha), 0.0f32)
        }
        Unary::ThresholdedRelu { alpha } => {
            te::if_then_else(x.clone().gt(f(alpha)), x, Expr::f32(0.0))
        }
        Unary::Softsign => x.clone() / (te::abs(x) + 1.0f32),
        Unary::Sign => te::if_then_else(
            x.clone().gt(0.0f32),
            Expr::f32(1.0),
            te::if_then_else(x.lt(0.0f32), Expr::f32(-1.0), Expr::f32(0.0)),
        ),
        Unary::Round => {
            // Halves to even: floor(x + 0.5), less one where x + 0.5 was an odd integer
            // reached from a half.
            let r = te::floor(x.clone() + 0.5f32);
            let half = (r.clone() - x).eq_(0.5f32);
            let odd = (r.clone() - te::floor(r.clone() / 2.0f32) * 2.0f32).eq_(1.0f32);
            te::if_then_else(half.and(odd), r.clone() - 1.0f32, r)
        }
        Unary::Tan => te::sin(x.clone()) / te::cos(x),
        Unary::Sinh => (te::exp(x.clone()) - te::exp(-x)) * 0.5f32,
        Unary::Cosh => (te::exp(x.clone()) + te::exp(-x)) * 0.5f32,
        Unary::Asinh => te::log(x.clone() + te::sqrt(x.clone() * x + 1.0f32)),
        Unary::Acosh => te::log(x.clone() + te::sqrt(x.clone() * x - 1.0f32)),
        Unary::Atanh => te::log((x.clone() + 1.0f32) / (Expr::f32(1.0) - x)) * 0.5f32,
        Unary::Atan => atan(x),
        Unary::Asin => atan(x.clone() / te::sqrt(Expr::f32(1.0) - x.clone() * x)),
        Unary::Acos => {
            Expr::f32(std::f32::consts::FRAC_PI_2)
                - atan(x.clone() / te::sqrt(Expr::f32(1.0) - x.clone() * x))
        }
        Unary::Mish => x.clone() * tanh(unary(Unary::Softplus, x, half)),
        Unary::Silu => x.clone() * te::sigmoid(x),
        Unary::Gelu { tanh: false } => {
            x.clone() * (erf_f32(x * std::f32::consts::FRAC_1_SQRT_2, half) + 1.0f32) * 0.5f32
        }
        Unary::Gelu { tanh: true } => {
            // Kept as tanh: the identity x·sigmoid(2u) = x / (1 + 2^(−2u·log2 e)) made
            // GPT-2's c_fc (this epilogue on 4096 × 3072 elements) 59.6 → 92 µs on the
            // H100 (`h100-2026-11-26f/gelu.txt`): the division costs more there than tanh.
            let inner =
                (x.clone() + x.clone() * x.clone() * x.clone() * 0.044_715f32) * 0.797_884_6f32;
            x * (tanh(inner) + 1.0f32) * 0.5f32
        }
        Unary::Not => truth(x.eq_(0.0f32)),
    }
}

/// atan in f32: reduced to [0, 1] by atan(x) = π/2 − atan(1/x); there a first guess
/// (π/4·t − t(t − 1)(0.2447 + 0.0663t), within 1.5e-3) refined by two Newton steps on
/// tan(y) = t, which leave only f32's rounding.
fn atan(x: Expr) -> Expr {
    let a = te::abs(x.clone());
    let big = a.clone().gt(1.0f32);
    let t = te::if_then_else(big.clone(), Expr::f32(1.0) / a.clone(), a);
    let mut y = t.clone() * std::f32::consts::FRAC_PI_4
        - t.clone() * (t.clone() - 1.0f32) * (t.clone() * 0.0663f32 + 0.2447f32);
    for _ in 0..2 {
        // y ← y − (tan y − t)·cos² y = y − (sin y − t·cos y)·cos y.
        let (s, c) = (te::sin(y.clone()), te::cos(y.clone()));
        y = y - (s - t.clone() * c.clone()) * c;
    }
    let r = te::if_then_else(big, Expr::f32(std::f32::consts::FRAC_PI_2) - y.clone(), y);
    te::if_then_else(x.lt(0.0f32), -r.clone(), r)
}

/// erf in f32 (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7: the f32
/// rounding of values near 1); `half`: the result is an f16 tensor (its one division by
/// an approximate reciprocal).
fn erf_f32(x: Expr, half: bool) -> Expr {
    let a = te::abs(x.clone());
    let y = a.clone() * 0.327_591_1f32 + 1.0f32;
    // For an f16 result the reciprocal as rsqrt(y)² (y ≥ 1): a few ulps of f32, far
    // inside binary16's precision, where CUDA's IEEE division is a sequence with a slow
    // path. In the GELU fused into f16 products' stores (H200, batch 8,
    // measurements/h200-2026-11-30f call 6): ConvNeXt-tiny 866 → 750 µs (its stage-1
    // up-projection 29.6 → 19.9 µs), BERT-base 724 → 697, DistilBERT 365.6 → 351; at
    // batch 1 ConvNeXt-tiny 443 → 428, BERT-base 421 → 405; ONNX Runtime's verdict
    // unchanged (8.33e-4, 2.61e-3 → 2.62e-3).
    let t = if half {
        let r = te::rsqrt(y);
        r.clone() * r
    } else {
        Expr::f32(1.0) / y
    };
    let poly = ((((t.clone() * 1.061_405_4f32 - 1.453_152_f32) * t.clone() + 1.421_413_7f32)
        * t.clone()
        - 0.284_496_74f32)
        * t.clone()
        + 0.254_829_6f32)
        * t;
    // exp(−a²) as 2^(−a²·log2 e): one `exp2` on GPUs.
    let y = Expr::f32(1.0) - poly * te::exp2(a.clone() * a * -std::f32::consts::LOG2_E);
    te::if_then_else(x.lt(0.0f32), Expr::f32(0.0) - y.clone(), y)
}

/// The ONNX ops that are a [`Unary`], each with its attributes and their defaults.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Abs", &[6, 13], |n| n.simple(Op::Unary(Unary::Abs))),
    OnnxOp::new("Acos", &[7, 22], |n| n.simple(Op::Unary(Unary::Acos))),
    OnnxOp::new("Acosh", &[9, 22], |n| n.simple(Op::Unary(Unary::Acosh))),
    OnnxOp::new("Asin", &[7, 22], |n| n.simple(Op::Unary(Unary::Asin))),
    OnnxOp::new("Asinh", &[9, 22], |n| n.simple(Op::Unary(Unary::Asinh))),
    OnnxOp::new("Atan", &[7, 22], |n| n.simple(Op::Unary(Unary::Atan))),
    OnnxOp::new("Atanh", &[9, 22], |n| n.simple(Op::Unary(Unary::Atanh))),
    OnnxOp::new("Ceil", &[6, 13], |n| n.simple(Op::Unary(Unary::Ceil))),
    OnnxOp::new("Celu", &[12], |n| {
        let alpha = n.float("alpha", 1.0)?;
        n.simple(Op::Unary(Unary::Celu { alpha }))
    }),
    OnnxOp::new("Cos", &[7, 22], |n| n.simple(Op::Unary(Unary::Cos))),
    OnnxOp::new("Cosh", &[9, 22], |n| n.simple(Op::Unary(Unary::Cosh))),
    OnnxOp::new("Elu", &[6, 22], |n| {
        let alpha = n.float("alpha", 1.0)?;
        n.simple(Op::Unary(Unary::Elu { alpha }))
    }),
    OnnxOp::new("Erf", &[9, 13], |n| n.simple(Op::Unary(Unary::Erf))),
    OnnxOp::new("Exp", &[6, 13], |n| n.simple(Op::Unary(Unary::Exp))),
    OnnxOp::new("Floor", &[6, 13], |n| n.simple(Op::Unary(Unary::Floor))),
    OnnxOp::new("Gelu", &[20], |n| {
        let tanh = match n.string("approximate", "none")?.as_str() {
            "none" => false,
            "tanh" => true,
            other => {
                return Err(n.attr_err("approximate", format!("`{other}` is not `none` or `tanh`")));
            }
        };
        n.simple(Op::Unary(Unary::Gelu { tanh }))
    }),
    OnnxOp::new("HardSigmoid", &[6, 22], |n| {
        let alpha = n.float("alpha", 0.2)?;
        let beta = n.float("beta", 0.5)?;
        n.simple(Op::Unary(Unary::HardSigmoid { alpha, beta }))
    }),
    OnnxOp::new("HardSwish", &[14, 22], |n| {
        n.simple(Op::Unary(Unary::HardSwish))
    }),
    OnnxOp::new("LeakyRelu", &[6, 16], |n| {
        let alpha = n.float("alpha", 0.01)?;
        n.simple(Op::Unary(Unary::LeakyRelu { alpha }))
    }),
    OnnxOp::new("Log", &[6, 13], |n| n.simple(Op::Unary(Unary::Log))),
    OnnxOp::new("Mish", &[18, 22], |n| n.simple(Op::Unary(Unary::Mish))),
    OnnxOp::new("Neg", &[6, 13], |n| n.simple(Op::Unary(Unary::Neg))),
    OnnxOp::new("Not", &[1], |n| n.simple(Op::Unary(Unary::Not))),
    OnnxOp::new("Reciprocal", &[6, 13], |n| {
        n.simple(Op::Unary(Unary::Reciprocal))
    }),
    OnnxOp::new("Relu", &[6, 13, 14], |n| n.simple(Op::Unary(Unary::Relu))),
    OnnxOp::new("Round", &[11, 22], |n| n.simple(Op::Unary(Unary::Round))),
    OnnxOp::new("Selu", &[6, 22], |n| {
        let alpha = n.float("alpha", 1.673_263_2)?;
        let gamma = n.float("gamma", 1.050_701)?;
        n.simple(Op::Unary(Unary::Selu { alpha, gamma }))
    }),
    OnnxOp::new("Sigmoid", &[6, 13], |n| n.simple(Op::Unary(Unary::Sigmoid))),
    OnnxOp::new("Sign", &[9, 13], |n| n.simple(Op::Unary(Unary::Sign))),
    OnnxOp::new("Sin", &[7, 22], |n| n.simple(Op::Unary(Unary::Sin))),
    OnnxOp::new("Sinh", &[9, 22], |n| n.simple(Op::Unary(Unary::Sinh))),
    OnnxOp::new("Softplus", &[1, 22], |n| {
        n.simple(Op::Unary(Unary::Softplus))
    }),
    OnnxOp::new("Softsign", &[1, 22], |n| {
        n.simple(Op::Unary(Unary::Softsign))
    }),
    OnnxOp::new("Sqrt", &[6, 13], |n| n.simple(Op::Unary(Unary::Sqrt))),
    OnnxOp::new("Tan", &[7, 22], |n| n.simple(Op::Unary(Unary::Tan))),
    OnnxOp::new("Tanh", &[6, 13], |n| n.simple(Op::Unary(Unary::Tanh))),
    OnnxOp::new("ThresholdedRelu", &[10, 22], |n| {
        let alpha = n.float("alpha", 1.0)?;
        n.simple(Op::Unary(Unary::ThresholdedRelu { alpha }))
    }),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        // Values from Abramowitz and Stegun's table 7.1 (to 10 digits and beyond).
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
            (-1.5, -0.966_105_146_475_310_7),
        ] {
            assert!(
                (erf(x) - want).abs() < 1e-13,
                "erf({x}) = {} not {want}",
                erf(x)
            );
        }
    }

    #[test]
    fn activations() {
        assert_eq!(Unary::Relu.apply(-2.0), 0.0);
        assert_eq!(Unary::HardSwish.apply(6.0), 6.0);
        assert_eq!(Unary::HardSwish.apply(-3.0), 0.0);
        assert_eq!(Unary::HardSwish.apply(1.0), 1.0 * (1.0 / 6.0 + 0.5));
        assert_eq!(Unary::Softplus.apply(100.0), 100.0);
        assert!((Unary::Sigmoid.apply(0.0) - 0.5).abs() < 1e-15);
        assert_eq!(Unary::Round.apply(2.5), 2.0);
        assert_eq!(Unary::Round.apply(-1.5), -2.0);
        assert_eq!(Unary::Sign.apply(0.0), 0.0);
        assert_eq!(Unary::Sign.apply(-3.0), -1.0);
        assert_eq!(Unary::ThresholdedRelu { alpha: 1.0 }.apply(1.0), 0.0);
        assert!((Unary::Gelu { tanh: false }.apply(1.0) - 0.841_344_746_068_542_9).abs() < 1e-14);
        assert!((Unary::Gelu { tanh: true }.apply(1.0) - 0.841_191_990_608_276_4).abs() < 1e-12);
    }
}
