//! Values and the operations on them.
//!
//! Every value of every dtype is held as 32 raw bits ([`Raw`]): `i32` as its two's
//! complement bits, `u32` as is, `f32` and `f16` as their IEEE bits, `bool` as 0 or 1.
//! One representation lets the executor keep one register file and one memory type;
//! the dtype is known when the kernel is compiled, so each operation is resolved then to
//! a plain function on raw bits.
//!
//! Floats are computed in `f64` and rounded to the dtype after every operation: for
//! `+ - * / sqrt` that is exactly IEEE single (and half) arithmetic, for the other
//! intrinsics it is a correctly rounded result of a more precise one.

use half::f16;

use crate::data::TensorData;
use crate::dtype::DType;
use crate::expr::{BinOp, Intrinsic, UnOp};

/// 32 raw bits holding a value of any dtype.
pub(super) type Raw = u32;

/// The one failure of an arithmetic operation.
#[derive(Clone, Copy, Debug)]
pub(super) struct DivByZero;

pub(super) type BinFn = fn(Raw, Raw) -> Result<Raw, DivByZero>;
pub(super) type UnFn = fn(Raw) -> Raw;
pub(super) type CallFn = fn(&[Raw; 3]) -> Raw;

fn fv(a: Raw) -> f64 {
    f32::from_bits(a) as f64
}
fn hv(a: Raw) -> f64 {
    f16::from_bits(a as u16).to_f64()
}
fn rf(x: f64) -> Raw {
    (x as f32).to_bits()
}
fn rh(x: f64) -> Raw {
    f16::from_f64(x).to_bits() as Raw
}
fn rb(b: bool) -> Raw {
    b as Raw
}

fn i32_floordiv(a: i32, b: i32) -> i32 {
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
        q.wrapping_sub(1)
    } else {
        q
    }
}

fn i32_floormod(a: i32, b: i32) -> i32 {
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r.wrapping_add(b)
    } else {
        r
    }
}

// Python's float floor modulo, the sign of the divisor.
fn float_floormod(a: f64, b: f64) -> f64 {
    a - b * (a / b).floor()
}

/// Integer ops on `i32`. Division and modulo by zero fail; `i32::MIN / -1` wraps.
fn i32_op(op: BinOp) -> Option<BinFn> {
    Some(match op {
        BinOp::Add => |a, b| Ok((a as i32).wrapping_add(b as i32) as Raw),
        BinOp::Sub => |a, b| Ok((a as i32).wrapping_sub(b as i32) as Raw),
        BinOp::Mul => |a, b| Ok((a as i32).wrapping_mul(b as i32) as Raw),
        BinOp::Div => |a, b| match b {
            0 => Err(DivByZero),
            _ => Ok((a as i32).wrapping_div(b as i32) as Raw),
        },
        BinOp::Mod => |a, b| match b {
            0 => Err(DivByZero),
            _ => Ok((a as i32).wrapping_rem(b as i32) as Raw),
        },
        BinOp::FloorDiv => |a, b| match b {
            0 => Err(DivByZero),
            _ => Ok(i32_floordiv(a as i32, b as i32) as Raw),
        },
        BinOp::FloorMod => |a, b| match b {
            0 => Err(DivByZero),
            _ => Ok(i32_floormod(a as i32, b as i32) as Raw),
        },
        BinOp::Min => |a, b| Ok((a as i32).min(b as i32) as Raw),
        BinOp::Max => |a, b| Ok((a as i32).max(b as i32) as Raw),
        BinOp::Eq => |a, b| Ok(rb(a == b)),
        BinOp::Ne => |a, b| Ok(rb(a != b)),
        BinOp::Lt => |a, b| Ok(rb((a as i32) < (b as i32))),
        BinOp::Le => |a, b| Ok(rb((a as i32) <= (b as i32))),
        BinOp::Gt => |a, b| Ok(rb((a as i32) > (b as i32))),
        BinOp::Ge => |a, b| Ok(rb((a as i32) >= (b as i32))),
        BinOp::And | BinOp::Or => return None,
    })
}

/// Integer ops on `u32`: wrapping; the floor forms equal the truncating ones.
fn u32_op(op: BinOp) -> Option<BinFn> {
    Some(match op {
        BinOp::Add => |a: Raw, b: Raw| Ok(a.wrapping_add(b)),
        BinOp::Sub => |a: Raw, b: Raw| Ok(a.wrapping_sub(b)),
        BinOp::Mul => |a: Raw, b: Raw| Ok(a.wrapping_mul(b)),
        BinOp::Div | BinOp::FloorDiv => |a: Raw, b: Raw| a.checked_div(b).ok_or(DivByZero),
        BinOp::Mod | BinOp::FloorMod => |a: Raw, b: Raw| a.checked_rem(b).ok_or(DivByZero),
        BinOp::Min => |a: Raw, b: Raw| Ok(a.min(b)),
        BinOp::Max => |a: Raw, b: Raw| Ok(a.max(b)),
        BinOp::Eq => |a, b| Ok(rb(a == b)),
        BinOp::Ne => |a, b| Ok(rb(a != b)),
        BinOp::Lt => |a, b| Ok(rb(a < b)),
        BinOp::Le => |a, b| Ok(rb(a <= b)),
        BinOp::Gt => |a, b| Ok(rb(a > b)),
        BinOp::Ge => |a, b| Ok(rb(a >= b)),
        BinOp::And | BinOp::Or => return None,
    })
}

/// Float ops, generated for `f32` and `f16` from the same table: decode to `f64`,
/// compute, round back. `Mod` is C's `fmod`; min/max return the non-NaN operand like
/// CUDA's `fminf`.
macro_rules! float_ops {
    ($name:ident, $dec:ident, $enc:ident) => {
        fn $name(op: BinOp) -> Option<BinFn> {
            Some(match op {
                BinOp::Add => |a, b| Ok($enc($dec(a) + $dec(b))),
                BinOp::Sub => |a, b| Ok($enc($dec(a) - $dec(b))),
                BinOp::Mul => |a, b| Ok($enc($dec(a) * $dec(b))),
                BinOp::Div => |a, b| Ok($enc($dec(a) / $dec(b))),
                BinOp::Mod => |a, b| Ok($enc($dec(a) % $dec(b))),
                BinOp::FloorDiv => |a, b| Ok($enc(($dec(a) / $dec(b)).floor())),
                BinOp::FloorMod => |a, b| Ok($enc(float_floormod($dec(a), $dec(b)))),
                BinOp::Min => |a, b| Ok($enc($dec(a).min($dec(b)))),
                BinOp::Max => |a, b| Ok($enc($dec(a).max($dec(b)))),
                BinOp::Eq => |a, b| Ok(rb($dec(a) == $dec(b))),
                BinOp::Ne => |a, b| Ok(rb($dec(a) != $dec(b))),
                BinOp::Lt => |a, b| Ok(rb($dec(a) < $dec(b))),
                BinOp::Le => |a, b| Ok(rb($dec(a) <= $dec(b))),
                BinOp::Gt => |a, b| Ok(rb($dec(a) > $dec(b))),
                BinOp::Ge => |a, b| Ok(rb($dec(a) >= $dec(b))),
                BinOp::And | BinOp::Or => return None,
            })
        }
    };
}

float_ops!(f32_op, fv, rf);
float_ops!(f16_op, hv, rh);

fn bool_op(op: BinOp) -> Option<BinFn> {
    Some(match op {
        BinOp::Eq => |a, b| Ok(rb((a != 0) == (b != 0))),
        BinOp::Ne => |a, b| Ok(rb((a != 0) != (b != 0))),
        BinOp::And => |a, b| Ok(rb(a != 0 && b != 0)),
        BinOp::Or => |a, b| Ok(rb(a != 0 || b != 0)),
        _ => return None,
    })
}

/// The function computing `a op b` for operands of type `ty`, or `None` where the IR
/// gives the operator no meaning on that type (`%` on bools, `&&` on floats).
pub(super) fn bin_fn(op: BinOp, ty: DType) -> Option<BinFn> {
    match ty {
        DType::I32 => i32_op(op),
        DType::U32 => u32_op(op),
        DType::F32 => f32_op(op),
        DType::F16 => f16_op(op),
        DType::Bool => bool_op(op),
    }
}

/// `op a` for an operand of type `ty`.
pub(super) fn un_fn(op: UnOp, ty: DType) -> Option<UnFn> {
    Some(match (op, ty) {
        (UnOp::Neg, DType::I32) => |a| (a as i32).wrapping_neg() as Raw,
        (UnOp::Neg, DType::U32) => |a: Raw| a.wrapping_neg(),
        (UnOp::Neg, DType::F32) => |a| rf(-fv(a)),
        (UnOp::Neg, DType::F16) => |a| rh(-hv(a)),
        (UnOp::Not, DType::Bool) => |a| rb(a == 0),
        _ => return None,
    })
}

/// Decodes a float of type `ty` (only f32 and f16 reach here).
fn fdec(ty: DType, a: Raw) -> f64 {
    if ty == DType::F16 { hv(a) } else { fv(a) }
}

/// An intrinsic on arguments of type `ty`.
pub(super) fn call_fn(f: Intrinsic, ty: DType) -> Option<CallFn> {
    macro_rules! unary {
        ($dec:ident, $enc:ident, $e:expr) => {{
            |a: &[Raw; 3]| {
                let g: fn(f64) -> f64 = $e;
                $enc(g($dec(a[0])))
            }
        }};
    }
    macro_rules! floats {
        ($dec:ident, $enc:ident) => {
            Some(match f {
                Intrinsic::Exp => unary!($dec, $enc, f64::exp),
                Intrinsic::Exp2 => unary!($dec, $enc, f64::exp2),
                Intrinsic::Log => unary!($dec, $enc, f64::ln),
                Intrinsic::Sqrt => unary!($dec, $enc, f64::sqrt),
                Intrinsic::Rsqrt => unary!($dec, $enc, |x| 1.0 / x.sqrt()),
                Intrinsic::Tanh | Intrinsic::TanhApprox => unary!($dec, $enc, f64::tanh),
                Intrinsic::Sigmoid => unary!($dec, $enc, |x| 1.0 / (1.0 + (-x).exp())),
                Intrinsic::Sin => unary!($dec, $enc, f64::sin),
                Intrinsic::Cos => unary!($dec, $enc, f64::cos),
                Intrinsic::Abs => unary!($dec, $enc, f64::abs),
                Intrinsic::Floor => unary!($dec, $enc, f64::floor),
                Intrinsic::Ceil => unary!($dec, $enc, f64::ceil),
                Intrinsic::Pow => |a: &[Raw; 3]| $enc($dec(a[0]).powf($dec(a[1]))),
                Intrinsic::Fma => |a: &[Raw; 3]| $enc($dec(a[0]).mul_add($dec(a[1]), $dec(a[2]))),
                // A collective, compiled to its own node (`compile::Op::Shuffle`).
                Intrinsic::ShuffleXor => return None,
            })
        };
    }
    match ty {
        DType::F32 => floats!(fv, rf),
        DType::F16 => floats!(hv, rh),
        DType::I32 if f == Intrinsic::Abs => Some(|a| (a[0] as i32).wrapping_abs() as Raw),
        DType::U32 if f == Intrinsic::Abs => Some(|a| a[0]),
        _ => None,
    }
}

/// Converts a value of type `from` to type `to` with C's rules: float to integer
/// truncates toward zero (saturating, NaN to 0), `i32`/`u32` reinterpret their bits,
/// anything to bool is `!= 0`, bool is 0 or 1.
pub(super) fn cast(from: DType, to: DType, a: Raw) -> Raw {
    use DType::*;
    match (from, to) {
        _ if from == to => a,
        (_, Bool) => rb(match from {
            F32 | F16 => fdec(from, a) != 0.0,
            _ => a != 0,
        }),
        (Bool, F32) => rf(a as f64),
        (Bool, F16) => rh(a as f64),
        (Bool, _) | (I32, U32) | (U32, I32) => a,
        (I32, F32) => rf(a as i32 as f64),
        (I32, F16) => rh(a as i32 as f64),
        (U32, F32) => rf(a as f64),
        (U32, F16) => rh(a as f64),
        (F32 | F16, I32) => fdec(from, a) as i32 as Raw,
        (F32 | F16, U32) => fdec(from, a) as u32,
        (F32, F16) => rh(fv(a)),
        (F16, F32) => rf(hv(a)),
        // Every pair is covered above; the compiler cannot see it through the guard.
        _ => a,
    }
}

/// The raw bits a fresh buffer of `dtype` is filled with: the same poison as
/// [`TensorData::poisoned`], so uninitialised reads show up in results.
pub(super) fn poison(dtype: DType) -> Raw {
    match dtype {
        DType::F32 => f32::NAN.to_bits(),
        DType::F16 => f16::NAN.to_bits() as Raw,
        DType::I32 => 0x7eadbeef,
        DType::U32 | DType::Bool => 0xdeadbeef,
    }
}

/// The raw form of a constant, or `None` if it does not fit its type.
pub(super) fn int_const(v: i64, ty: DType) -> Option<Raw> {
    match ty {
        DType::I32 => i32::try_from(v).ok().map(|x| x as Raw),
        DType::U32 => u32::try_from(v).ok(),
        _ => None,
    }
}

/// The raw form of a float constant of type `ty`.
pub(super) fn float_const(v: f64, ty: DType) -> Option<Raw> {
    match ty {
        DType::F32 => Some(rf(v)),
        DType::F16 => Some(rh(v)),
        _ => None,
    }
}

/// The dtype a host tensor of buffer dtype `dtype` is stored as (bool buffers are
/// stored as `u32`, as [`TensorData`] has no bool variant).
pub(super) fn storage_dtype(dtype: DType) -> DType {
    if dtype == DType::Bool {
        DType::U32
    } else {
        dtype
    }
}

/// The raw contents of host data.
pub(super) fn to_raw(d: &TensorData) -> Vec<Raw> {
    match d {
        TensorData::F32(v) => v.iter().map(|x| x.to_bits()).collect(),
        TensorData::F16(v) => v.iter().map(|x| x.to_bits() as Raw).collect(),
        TensorData::I32(v) => v.iter().map(|&x| x as Raw).collect(),
        TensorData::U32(v) => v.clone(),
    }
}

/// Writes raw contents back into host data of the same length.
pub(super) fn from_raw(raw: &[Raw], d: &mut TensorData) {
    match d {
        TensorData::F32(v) => v
            .iter_mut()
            .zip(raw)
            .for_each(|(x, &r)| *x = f32::from_bits(r)),
        TensorData::F16(v) => v
            .iter_mut()
            .zip(raw)
            .for_each(|(x, &r)| *x = f16::from_bits(r as u16)),
        TensorData::I32(v) => v.iter_mut().zip(raw).for_each(|(x, &r)| *x = r as i32),
        TensorData::U32(v) => v.iter_mut().zip(raw).for_each(|(x, &r)| *x = r),
    }
}
