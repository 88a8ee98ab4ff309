//! Elementwise functions of two inputs with NumPy broadcasting: arithmetic, Pow, Mod,
//! PRelu, the comparisons and the logical ops (ONNX's Add, Sub, Mul, Div, Pow, Mod, Max,
//! Min, PRelu, Equal, Less, ..., And, Or, Xor).

use std::fmt;

use ndarray::{ArrayD, IxDyn, Zip};
use weft_ir::dtype::DType;
use weft_ir::expr::Intrinsic;
use weft_ir::prelude::*;

use super::inline::{broadcast_index, truth};
use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, broadcast, float, same_type};
use super::{Cast, Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role, Unary};
use crate::tensor::{Tensor, TensorId};

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
    /// The remainder of `a / b` (ONNX's Mod): with `fmod`, C's `fmod` (the quotient
    /// truncated, the result has `a`'s sign; floats or integers); without, Python's `%`
    /// (the quotient floored, the result has `b`'s sign; integers only, as ONNX has it).
    Mod {
        fmod: bool,
    },
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
            | Binary::Mod { .. }
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
            Binary::Mod { fmod } => remainder(a, b, *fmod),
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
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        x.elementwise()
    }

    fn name(&self) -> &'static str {
        match self {
            Binary::Add => "Add",
            Binary::Sub => "Sub",
            Binary::Mul => "Mul",
            Binary::Div => "Div",
            Binary::Pow => "Pow",
            Binary::Max => "Max",
            Binary::Min => "Min",
            Binary::Mod { .. } => "Mod",
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

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Binary::Mod { fmod } => write!(f, "(fmod={})", u8::from(*fmod)),
            Binary::Add
            | Binary::Sub
            | Binary::Mul
            | Binary::Div
            | Binary::Pow
            | Binary::Max
            | Binary::Min
            | Binary::PRelu
            | Binary::Equal
            | Binary::Less
            | Binary::LessOrEqual
            | Binary::Greater
            | Binary::GreaterOrEqual
            | Binary::And
            | Binary::Or
            | Binary::Xor => Ok(()),
        }
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 2, 2)?;
        same_type(inputs)?;
        if let Binary::Mod { fmod } = self {
            let dtype = inputs[0].dtype;
            if dtype == DType::Bool || (!fmod && !dtype.is_int()) {
                let takes = if *fmod {
                    "numbers"
                } else {
                    "integers (ONNX's Mod takes floats with fmod=1 only)"
                };
                return Err(format!(
                    "input 0 `{}` is {dtype}: Mod with fmod={} takes {takes}",
                    inputs[0].name,
                    u8::from(*fmod)
                ));
            }
        }
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
        if let Binary::Mod { fmod } = *self
            && x.input_tensor(0).dtype.is_int()
        {
            return Some(int_modulo(
                x.input(0, &bcast(0)),
                x.input(1, &bcast(1)),
                fmod,
            ));
        }
        Some(binary(*self, x.input(0, &bcast(0)), x.input(1, &bcast(1))))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        if let Binary::Mod { fmod } = self {
            node.int("fmod", i64::from(*fmod));
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

/// The remainder of `a / b` in float64: C's `fmod` (`truncate`; exact, NaN where `b` is
/// 0 or `a` infinite, `a` where `b` is infinite), else with the floored quotient (the
/// result has `b`'s sign).
fn remainder(a: f64, b: f64, truncate: bool) -> f64 {
    let r = a % b;
    if truncate || r == 0.0 || (r < 0.0) == (b < 0.0) {
        r
    } else {
        r + b
    }
}

/// The remainder of floats `x / y` in f32 (integers take [`int_modulo`]), the quotient
/// truncated (`truncate`, C's `fmod`) or floored (Python's `%`). Exact for floats whose
/// quotient is below 2^24 where the target fuses the multiply-add: the quotient is rounded to an integer, the
/// remainder `x − q·y` taken by one fused multiply-add (exact wherever the true
/// remainder is representable), and that done once more on the remainder (a quotient
/// of a few units, exact, in case a target's division is not correctly rounded); then
/// one `|y|` added or taken away where the remainder is still outside `[0, |y|)` (times
/// the sign of `x` for `fmod`, of `y` else). `q = 0` leaves `x` as it is, so that an
/// infinite `y` gives `x`; a NaN, a zero `y` or an infinite `x` give NaN.
fn modulo(x: Expr, y: Expr, truncate: bool) -> Expr {
    let quotient = |v: Expr| {
        let q = v / y.clone();
        if truncate {
            te::if_then_else(q.clone().lt(0.0f32), te::ceil(q.clone()), te::floor(q))
        } else {
            te::floor(q)
        }
    };
    let step = |v: Expr| {
        let q = quotient(v.clone());
        let rest = Expr::call(Intrinsic::Fma, vec![-q.clone(), y.clone(), v.clone()]);
        te::if_then_else(q.eq_(0.0f32), v, rest)
    };
    let r = step(step(x.clone()));
    // The range is [0, |y|) times `s`: x's sign for fmod, y's for the floored form.
    let signed_by = if truncate { x } else { y.clone() };
    let s = te::if_then_else(signed_by.lt(0.0f32), Expr::f32(-1.0), Expr::f32(1.0));
    let ay = te::abs(y);
    let t = r * s.clone();
    let t = te::if_then_else(
        t.clone().lt(0.0f32),
        t.clone() + ay.clone(),
        te::if_then_else(t.clone().ge(ay.clone()), t.clone() - ay, t),
    );
    t * s
}

/// The remainder of integers `x / y` (held in f32, exact to 2^24) in i32 arithmetic,
/// where it is exact on every target (the f32 form's fused multiply-add is not fused
/// on some Vulkan drivers, and `q·y` past 2^24 then rounds): the floored remainder
/// (`y`'s sign), and for `fmod` one `y` taken back where it is not 0 and `x`'s sign
/// differs from `y`'s. A zero divisor gives NaN, as the reference's does.
fn int_modulo(x: Expr, y: Expr, truncate: bool) -> Expr {
    let (a, b) = (x.cast(DType::I32), y.cast(DType::I32));
    let zero = b.clone().eq_(0);
    let divisor = te::if_then_else(zero.clone(), Expr::int(1), b);
    let floored = a.clone().floormod(divisor.clone());
    let r = if truncate {
        // A non-zero remainder has `a ≠ 0`; the signs differ where one is below 0.
        let differ =
            (a.clone().lt(0).and(divisor.clone().gt(0))).or(a.gt(0).and(divisor.clone().lt(0)));
        let back = floored.clone().ne_(0).and(differ);
        te::if_then_else(back, floored.clone() - divisor, floored)
    } else {
        floored
    };
    te::if_then_else(zero, Expr::f32(f32::NAN), r.cast(DType::F32))
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
        Binary::Mod { fmod } => modulo(x, y, fmod),
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
/// Min and Sum of any number of inputs (a chain of binary nodes), and Mean (their Sum,
/// divided by their count).
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Add", &[7, 13, 14], |n| n.simple(Op::Binary(Binary::Add))),
    OnnxOp::new("And", &[7], |n| n.simple(Op::Binary(Binary::And))),
    OnnxOp::new("Div", &[7, 13, 14], import_div),
    OnnxOp::new("Equal", &[7, 11, 13, 19], |n| {
        n.simple(Op::Binary(Binary::Equal))
    }),
    OnnxOp::new("Greater", &[7, 9, 13], |n| {
        n.simple(Op::Binary(Binary::Greater))
    }),
    OnnxOp::new("GreaterOrEqual", &[12, 16], |n| {
        n.simple(Op::Binary(Binary::GreaterOrEqual))
    }),
    OnnxOp::new("Less", &[7, 9, 13], |n| n.simple(Op::Binary(Binary::Less))),
    OnnxOp::new("LessOrEqual", &[12, 16], |n| {
        n.simple(Op::Binary(Binary::LessOrEqual))
    }),
    OnnxOp::new("Max", &[6, 8, 12, 13], |n| variadic(n, Binary::Max)),
    OnnxOp::new("Mean", &[6, 8, 13], import_mean),
    OnnxOp::new("Min", &[6, 8, 12, 13], |n| variadic(n, Binary::Min)),
    OnnxOp::new("Mod", &[10, 13], import_mod),
    OnnxOp::new("Mul", &[7, 13, 14], |n| n.simple(Op::Binary(Binary::Mul))),
    OnnxOp::new("Or", &[7], |n| n.simple(Op::Binary(Binary::Or))),
    OnnxOp::new("PRelu", &[7, 9, 16], |n| {
        n.simple(Op::Binary(Binary::PRelu))
    }),
    OnnxOp::new("Pow", &[7, 12, 13, 15], import_pow),
    OnnxOp::new("Sub", &[7, 13, 14], |n| n.simple(Op::Binary(Binary::Sub))),
    OnnxOp::new("Sum", &[6, 8, 13], |n| variadic(n, Binary::Add)),
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

/// Mean of any number of float inputs (broadcast from opset 8): their Sum (a chain of
/// Adds, in input order), divided by how many there are.
fn import_mean(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let count = n.input_count();
    if count == 0 {
        return Err(n.err("has no inputs"));
    }
    let mut acc = n.data(0)?;
    let dtype = n.tensor(acc).dtype;
    if !dtype.is_float() {
        return Err(n.err(format!("input 0 is {dtype}: ONNX's Mean takes floats")));
    }
    if count == 1 {
        return n.emit(Op::Identity, vec![acc]);
    }
    for i in 1..count {
        let next = n.data(i)?;
        acc = n.step(&format!("sum{i}"), Op::Binary(Binary::Add), vec![acc, next])?;
    }
    let k = n.add_constant("count", vec![], vec![count as f32], dtype);
    n.emit(Op::Binary(Binary::Div), vec![acc, k])
}

/// Mod: `fmod` 0 (the default; integers) or 1.
fn import_mod(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let fmod = n.flag("fmod", false)?;
    n.simple(Op::Binary(Binary::Mod { fmod }))
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
    let int_base = n.tensor(base).dtype.is_int();
    // An integer base is raised in f32 and the result made an integer again (below).
    let dtype = if int_base {
        DType::F32
    } else {
        n.tensor(base).dtype
    };
    let exponent = match integer {
        Some(c) => {
            let values: Vec<f32> = c
                .ints()
                .unwrap_or_default()
                .iter()
                .map(|&v| v as f32)
                .collect();
            n.add_constant("exponent", c.dims, values, dtype)
        }
        None => n.data(1)?,
    };
    if !int_base {
        return n.emit(Op::Binary(Binary::Pow), vec![base, exponent]);
    }
    import_int_pow(n, base, exponent)
}

/// Pow of an integer base (ONNX's result has the base's type): base and exponent as
/// f32, the power, then an integer again. An integer exponent gives an integer, which
/// is rounded (f32's `pow` may be an ulp off); a float exponent's power is truncated
/// toward zero as ONNX's reference casts it, after scaling by `1 + 2⁻²⁰` so that a
/// power an ulp or two below an integer is not truncated past it. Exact while results
/// stay below 2²⁴ (f32's integers).
fn import_int_pow(
    n: &mut dyn OnnxNode,
    base: TensorId,
    exponent: TensorId,
) -> Result<(), OnnxError> {
    let to_f32 = Op::Cast(Cast { to: DType::F32 });
    let to_int = Op::Cast(Cast {
        to: n.tensor(base).dtype,
    });
    let b = n.step("base_f32", to_f32.clone(), vec![base])?;
    let int_exponent = !n.tensor(exponent).dtype.is_float();
    let e = if int_exponent {
        n.step("exponent_f32", to_f32, vec![exponent])?
    } else {
        exponent
    };
    let e = if n.tensor(e).dtype == DType::F32 {
        e
    } else {
        n.step("exponent_f32", Op::Cast(Cast { to: DType::F32 }), vec![e])?
    };
    let p = n.step("power", Op::Binary(Binary::Pow), vec![b, e])?;
    let p = if int_exponent {
        n.step("rounded", Op::Unary(Unary::Round), vec![p])?
    } else {
        let nudge = n.add_constant("nudge", vec![], vec![1.0 + 2f32.powi(-20)], DType::F32);
        n.step("nudged", Op::Binary(Binary::Mul), vec![p, nudge])?
    };
    n.emit(to_int, vec![p])
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

    #[test]
    fn remainders_take_the_divisor_or_the_dividend_sign() {
        let floored = Binary::Mod { fmod: false };
        let c = Binary::Mod { fmod: true };
        for (a, b, py, fmod) in [
            (7.0, 3.0, 1.0, 1.0),
            (-7.0, 3.0, 2.0, -1.0),
            (7.0, -3.0, -2.0, 1.0),
            (-7.0, -3.0, -1.0, -1.0),
            (6.0, 3.0, 0.0, 0.0),
            (-6.0, 4.0, 2.0, -2.0),
        ] {
            assert_eq!(floored.apply(a, b), py, "{a} % {b}");
            assert_eq!(c.apply(a, b), fmod, "fmod({a}, {b})");
        }
        assert_eq!(c.apply(5.5, f64::INFINITY), 5.5);
        assert!(c.apply(f64::INFINITY, 2.0).is_nan());
        assert!(c.apply(1.0, 0.0).is_nan());
    }
}
