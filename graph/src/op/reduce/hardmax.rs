//! ONNX's Hardmax from reductions weft has: 1 at the first greatest element along the
//! axis and 0 elsewhere. With `m` the maximum (a ReduceMax), the first index where
//! `x = m` is a ReduceMin over the axis of the index where `x = m` and the axis length
//! elsewhere; the output compares each index with it. A row holding NaN has no greatest
//! element and is all 0.

use weft_ir::dtype::DType;

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Binary, Cast, Op, Reshape};
use super::{Reduce, ReduceKind};
use crate::tensor::TensorId;

/// Hardmax: along `axis` (−1 unless given) from opset 13; before, over the input
/// coerced to a matrix at `axis` (1 unless given), as Softmax was.
pub(super) fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let xs = n.shape(x);
    let r = xs.len();
    if r == 0 {
        return Err(n.err("input 0 is a scalar: Hardmax needs an axis"));
    }
    let dtype = n.tensor(x).dtype;
    if !dtype.is_float() {
        return Err(n.err(format!("input 0 is {dtype}: Hardmax takes float tensors")));
    }
    if n.opset() >= 13 {
        let axis = n.int("axis", -1)?;
        let axis = n.axis("axis", axis, r, false)?;
        let hit = first_max(n, x, axis)?;
        return n.emit(Op::Cast(Cast { to: dtype }), vec![hit]);
    }
    let axis = n.int("axis", 1)?;
    let axis = n.axis("axis", axis, r, true)?;
    let rows: usize = xs[..axis].iter().product();
    let cols: usize = xs[axis..].iter().product();
    let m = n.step(
        "matrix",
        Op::Reshape(Reshape {
            shape: vec![rows, cols],
        }),
        vec![x],
    )?;
    let hit = first_max(n, m, 1)?;
    let y = n.step("one_hot", Op::Cast(Cast { to: dtype }), vec![hit])?;
    n.emit(Op::Reshape(Reshape { shape: xs }), vec![y])
}

/// True (bool) at the first greatest element of `x` along `axis`.
fn first_max(n: &mut dyn OnnxNode, x: TensorId, axis: usize) -> Result<TensorId, OnnxError> {
    let xs = n.shape(x);
    let len = xs[axis];
    let along = |kind| {
        Op::Reduce(Reduce {
            kind,
            axes: vec![axis],
            keep_dims: true,
        })
    };
    let m = n.step("max", along(ReduceKind::Max), vec![x])?;
    let at_max = n.step("at_max", Op::Binary(Binary::Equal), vec![x, m])?;
    // Indices in f32, exact far past any axis a tensor has.
    let mut iota_shape = vec![1; xs.len()];
    iota_shape[axis] = len;
    let iota = n.add_constant(
        "index",
        iota_shape,
        (0..len).map(|i| i as f32).collect(),
        DType::F32,
    );
    let past = n.add_constant("past", vec![], vec![len as f32], DType::F32);
    let where_max = n.step("index_at_max", Op::Where, vec![at_max, iota, past])?;
    let first = n.step("first", along(ReduceKind::Min), vec![where_max])?;
    n.step("hit", Op::Binary(Binary::Equal), vec![iota, first])
}
