//! Elementwise functions of two inputs with NumPy broadcasting: arithmetic, Pow, PRelu,
//! the comparisons and the logical ops (ONNX's Add, Sub, Mul, Div, Pow, Max, Min, PRelu,
//! Equal, Less, ..., And, Or, Xor).

use std::fmt;

use ndarray::{ArrayD, IxDyn, Zip};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::inline::{broadcast_index, truth};
use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, broadcast, float, same_type};
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// Elementwise functions of two inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Max,
    Min,
    /// `a` where `a ≥ 0`, else `b·a` (ONNX's PRelu: `b` is the slope).
    PRelu,
    /// The comparisons and logical ops give bool (1 or 0); the logical ones read a
    /// non-zero input as true.
    Equal,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    And,
    Or,
    Xor,
}

impl Binary {
    /// True for the comparisons and logical ops, which give bool.
    pub fn gives_bool(&self) -> bool {
        match self {
            Binary::Equal
            | Binary::Less
            | Binary::LessOrEqual
            | Binary::Greater
            | Binary::GreaterOrEqual
            | Binary::And
            | Binary::Or
            | Binary::Xor => true,
            Binary::Add
            | Binary::Sub
            | Binary::Mul
            | Binary::Div
            | Binary::Pow
            | Binary::Max
            | Binary::Min
            | Binary::PRelu => false,
        }
    }

    /// The function on two float64 values.
    pub fn apply(&self, a: f64, b: f64) -> f64 {
        use super::truth;
        match self {
            Binary::Add => a + b,
            Binary::Sub => a - b,
            Binary::Mul => a * b,
            Binary::Div => a / b,
            Binary::Pow => a.powf(b),
            Binary::Max => a.max(b),
            Binary::Min => a.min(b),
            Binary::PRelu => {
                if a >= 0.0 {
                    a
                } else {
                    b * a
                }
            }
            Binary::Equal => truth(a == b),
            Binary::Less => truth(a < b),
            Binary::LessOrEqual => truth(a <= b),
            Binary::Greater => truth(a > b),
            Binary::GreaterOrEqual => truth(a >= b),
            Binary::And => truth(a != 0.0 && b != 0.0),
            Binary::Or => truth(a != 0.0 || b != 0.0),
            Binary::Xor => truth((a != 0.0) != (b != 0.0)),
        }
    }
}

impl OpDef for Binary {
    fn name(&self) -> &'static str {
        match self {
            Binary::Add => "Add",
            Binary::Sub => "Sub",
            Binary::Mul => "Mul",
            Binary::Div => "Div",
            Binary::Pow => "Pow",
            Binary::Max => "Max",
            Binary::Min => "Min",
            Binary::PRelu => "PRelu",
            Binary::Equal => "Equal",
            Binary::Less => "Less",
            Binary::LessOrEqual => "LessOrEqual",
            Binary::Greater => "Greater",
            Binary::GreaterOrEqual => "GreaterOrEqual",
            Binary::And => "And",
            Binary::Or => "Or",
            Binary::Xor => "Xor",
        }
    }

    fn fmt_attrs(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 2, 2)?;
        same_type(inputs)?;
        if matches!(self, Binary::And | Binary::Or | Binary::Xor) && inputs[0].dtype != DType::Bool
        {
            return Err(format!("inputs are {}, not bool", inputs[0].dtype));
        }
        if matches!(self, Binary::Pow | Binary::PRelu) {
            float(inputs[0], 0)?;
        }
        let shape = broadcast(&inputs[0].shape, &inputs[1].shape).ok_or_else(|| {
            format!(
                "inputs `{}` {:?} and `{}` {:?} do not broadcast",
                inputs[0].name, inputs[0].shape, inputs[1].name, inputs[1].shape
            )
        })?;
        let dtype = if self.gives_bool() {
            DType::Bool
        } else {
            inputs[0].dtype
        };
        Ok((shape, dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        broadcast_with(x[0], x[1], |p, q| self.apply(p, q))
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::SameShape)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let bcast = |i: usize| broadcast_index(&x.input_tensor(i).shape, idx);
        if *self == Binary::Pow {
            // A constant scalar exponent (GELU's x³) is known here.
            let exponent = x
                .input_tensor(1)
                .data
                .as_ref()
                .and_then(|d| (d.len() == 1).then(|| d.iter().next().copied()).flatten());
            return Some(pow(x.input(0, &bcast(0)), x.input(1, &bcast(1)), exponent));
        }
        Some(binary(*self, x.input(0, &bcast(0)), x.input(1, &bcast(1))))
    }

    fn export(&self, _: &mut ExportNode<'_>) -> Result<(), String> {
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// `f(a, b)` with NumPy broadcasting, in float64.
pub(crate) fn broadcast_with(
    a: &ArrayD<f64>,
    b: &ArrayD<f64>,
    f: impl Fn(f64, f64) -> f64,
) -> ArrayD<f64> {
    let shape = broadcast(a.shape(), b.shape()).expect("checked by inference");
    let av = a.broadcast(IxDyn(&shape)).expect("checked by inference");
    let bv = b.broadcast(IxDyn(&shape)).expect("checked by inference");
    let mut out = ArrayD::zeros(IxDyn(&shape));
    Zip::from(&mut out)
        .and(&av)
        .and(&bv)
        .for_each(|o, &p, &q| *o = f(p, q));
    out
}

/// `x^y` as ONNX defines it on every target: WGSL's and MSL's `pow` are undefined for a
/// negative base (and CUDA's `powf` is not, so the targets would disagree). A constant
/// small integer exponent is a product (exact, and faster); otherwise `|x|^y`, negated
/// for an odd integer `y` where `x < 0`, NaN for a fractional one, and 1 where `y = 0`.
fn pow(x: Expr, y: Expr, constant: Option<f32>) -> Expr {
    if let Some(c) = constant
        && c.fract() == 0.0
        && (1.0..=4.0).contains(&c.abs())
    {
        let mut p = x.clone();
        for _ in 1..c.abs() as i32 {
            p = p * x.clone();
        }
        return if c < 0.0 { Expr::f32(1.0) / p } else { p };
    }
    if constant == Some(0.5) {
        return te::sqrt(x);
    }
    let magnitude = te::pow(te::abs(x.clone()), y.clone());
    let integer = te::floor(y.clone()).eq_(y.clone());
    let odd = (y.clone() - te::floor(y.clone() * 0.5f32) * 2.0f32).eq_(1.0f32);
    let negative = te::if_then_else(
        integer,
        te::if_then_else(odd, -magnitude.clone(), magnitude.clone()),
        Expr::f32(f32::NAN),
    );
    te::if_then_else(
        y.eq_(0.0f32),
        Expr::f32(1.0),
        te::if_then_else(x.lt(0.0f32), negative, magnitude),
    )
}

/// An elementwise function of two values, in f32.
fn binary(b: Binary, x: Expr, y: Expr) -> Expr {
    match b {
        Binary::Add => x + y,
        Binary::Sub => x - y,
        Binary::Mul => x * y,
        Binary::Div => x / y,
        Binary::Pow => pow(x, y, None),
        Binary::Max => te::maximum(x, y),
        Binary::Min => te::minimum(x, y),
        Binary::PRelu => te::if_then_else(x.clone().ge(0.0f32), x.clone(), x * y),
        Binary::Equal => truth(x.eq_(y)),
        Binary::Less => truth(x.lt(y)),
        Binary::LessOrEqual => truth(x.le(y)),
        Binary::Greater => truth(x.gt(y)),
        Binary::GreaterOrEqual => truth(x.ge(y)),
        Binary::And => truth(x.ne_(0.0f32).and(y.ne_(0.0f32))),
        Binary::Or => truth(x.ne_(0.0f32).or(y.ne_(0.0f32))),
        Binary::Xor => truth((truth(x.ne_(0.0f32)) + truth(y.ne_(0.0f32))).eq_(1.0f32)),
    }
}

/// The ONNX ops that are a [`Binary`]: the elementwise ones of two inputs, Pow, and Max,
/// Min and Sum of any number of inputs (a chain of binary nodes).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Add", &[13, 14], |n| n.simple(Op::Binary(Binary::Add))),
    OnnxOp::new("And", &[7], |n| n.simple(Op::Binary(Binary::And))),
    OnnxOp::new("Div", &[13, 14], import_div),
    OnnxOp::new("Equal", &[13, 19], |n| n.simple(Op::Binary(Binary::Equal))),
    OnnxOp::new("Greater", &[13], |n| n.simple(Op::Binary(Binary::Greater))),
    OnnxOp::new("GreaterOrEqual", &[12, 16], |n| {
        n.simple(Op::Binary(Binary::GreaterOrEqual))
    }),
    OnnxOp::new("Less", &[13], |n| n.simple(Op::Binary(Binary::Less))),
    OnnxOp::new("LessOrEqual", &[12, 16], |n| {
        n.simple(Op::Binary(Binary::LessOrEqual))
    }),
    OnnxOp::new("Max", &[13], |n| variadic(n, Binary::Max)),
    OnnxOp::new("Min", &[13], |n| variadic(n, Binary::Min)),
    OnnxOp::new("Mul", &[13, 14], |n| n.simple(Op::Binary(Binary::Mul))),
    OnnxOp::new("Or", &[7], |n| n.simple(Op::Binary(Binary::Or))),
    OnnxOp::new("PRelu", &[9, 16], |n| n.simple(Op::Binary(Binary::PRelu))),
    OnnxOp::new("Pow", &[13, 15], import_pow),
    OnnxOp::new("Sub", &[13, 14], |n| n.simple(Op::Binary(Binary::Sub))),
    OnnxOp::new("Sum", &[13], |n| variadic(n, Binary::Add)),
    OnnxOp::new("Xor", &[7], |n| n.simple(Op::Binary(Binary::Xor))),
];

/// Max, Min or Sum of any number of inputs: a chain of binary nodes.
fn variadic(n: &mut dyn OnnxNode, f: Binary) -> Result<(), OnnxError> {
    let count = n.input_count();
    if count == 0 {
        return Err(n.err("has no inputs"));
    }
    let mut acc = n.data(0)?;
    if count == 1 {
        return n.emit(Op::Identity, vec![acc]);
    }
    for i in 1..count - 1 {
        let next = n.data(i)?;
        acc = n.step(&i.to_string(), Op::Binary(f), vec![acc, next])?;
    }
    let last = n.data(count - 1)?;
    n.emit(Op::Binary(f), vec![acc, last])
}

/// Div; of integers, the quotient truncated toward zero (as ONNX Runtime's C++ division
/// does): weft's kernels divide in f32, so a Cast to i32 after the Div truncates it.
fn import_div(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let a = n.data(0)?;
    let b = n.data(1)?;
    let dtype = n.tensor(a).dtype;
    match dtype {
        DType::I32 | DType::U32 => {
            let q = n.step("quotient", Op::Binary(Binary::Div), vec![a, b])?;
            n.emit(Op::Cast(super::Cast { to: dtype }), vec![q])
        }
        DType::F32 | DType::F16 | DType::Bool => n.emit(Op::Binary(Binary::Div), vec![a, b]),
    }
}

/// Pow; an integer constant exponent is taken as a float of the base's type.
fn import_pow(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let base = n.data(0)?;
    let integer = if n.has_input(1) && !n.is_computed(1) {
        n.constant(1)?.filter(|c| c.ints().is_some())
    } else {
        None
    };
    let exponent = match integer {
        Some(c) => {
            let values: Vec<f32> = c
                .ints()
                .unwrap_or_default()
                .iter()
                .map(|&v| v as f32)
                .collect();
            let dtype = n.tensor(base).dtype;
            n.add_constant("exponent", c.dims, values, dtype)
        }
        None => n.data(1)?,
    };
    n.emit(Op::Binary(Binary::Pow), vec![base, exponent])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions() {
        assert_eq!(Binary::Max.apply(1.0, 3.0), 3.0);
        assert_eq!(Binary::PRelu.apply(-2.0, 0.25), -0.5);
        assert_eq!(Binary::Xor.apply(1.0, 0.0), 1.0);
    }
}
