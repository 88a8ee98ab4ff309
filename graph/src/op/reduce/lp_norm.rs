//! ONNX's LpNormalization from reductions weft has: `x / ‖x‖_p` along an axis.

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Binary, Op, Unary};
use super::{Reduce, ReduceKind};

/// LpNormalization (`axis` −1, `p` 2 unless given; `p` is 1 or 2): `x / ‖x‖_p` along
/// the axis — a ReduceSum of `|x|`, or the square root of one of `x²`.
pub(super) fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let r = n.shape(x).len();
    if r == 0 {
        return Err(n.err("input 0 is a scalar: LpNormalization needs an axis"));
    }
    let axis = n.int("axis", -1)?;
    let axis = n.axis("axis", axis, r, false)?;
    let sum = Op::Reduce(Reduce {
        kind: ReduceKind::Sum,
        axes: vec![axis],
        keep_dims: true,
    });
    let norm = match n.int("p", 2)? {
        1 => {
            let a = n.step("abs", Op::Unary(Unary::Abs), vec![x])?;
            n.step("norm", sum, vec![a])?
        }
        2 => {
            let sq = n.step("square", Op::Binary(Binary::Mul), vec![x, x])?;
            let s = n.step("sum", sum, vec![sq])?;
            n.step("norm", Op::Unary(Unary::Sqrt), vec![s])?
        }
        p => return Err(n.attr_err("p", format!("is {p}: ONNX defines 1 and 2"))),
    };
    n.emit(Op::Binary(Binary::Div), vec![x, norm])
}
