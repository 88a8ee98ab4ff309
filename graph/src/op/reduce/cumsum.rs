//! ONNX's CumSum as a reduction weft has: along the axis (moved last), each output
//! element `j` is the sum of the row with the elements it does not include zeroed — the
//! row broadcast to an `[n, n]` matrix (Expand), its triangle kept (Trilu: `i ≤ j`, or
//! `i < j` where `exclusive`, `i ≥ j` or `i > j` where `reverse`), summed along its
//! last dimension (ReduceSum). Expand and Trilu are injective, so the reduction reads
//! the row itself and nothing of `n²` is stored; it costs `n` additions per element,
//! which the short axes exporters write (position ids over a sequence) afford.
//!
//! Integers (RoBERTa's and OPT's position ids sum an int64 mask) are summed in f32 and
//! cast back: exact while every partial sum is below 2^24, as weft's integers are.

use weft_ir::dtype::DType;

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Cast, Expand, Op, Reshape, Transpose, Trilu};
use super::{Reduce, ReduceKind};

/// CumSum (`axis` a constant input; `exclusive`, `reverse`).
pub(super) fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dims = n.shape(x);
    let r = dims.len();
    let exclusive = n.flag("exclusive", false)?;
    let reverse = n.flag("reverse", false)?;
    let axis = match n.int_input(1, "axis")? {
        Some(v) if v.len() == 1 => v[0],
        Some(v) => return Err(n.err(format!("input 1 (axis) holds {v:?}, not one value"))),
        None => return Err(n.err("input 1 (axis) is missing")),
    };
    if r == 0 {
        return Err(n.err("input 0 is a scalar: CumSum needs an axis to sum along"));
    }
    let axis = n.axis("axis", axis, r, false)?;
    let dtype = n.tensor(x).dtype;
    let mut t = x;
    if !dtype.is_float() {
        t = n.step("as_float", Op::Cast(Cast { to: DType::F32 }), vec![t])?;
    }
    // The axis last.
    let mut perm: Vec<usize> = (0..r).filter(|&d| d != axis).collect();
    perm.push(axis);
    let moved = axis != r - 1;
    if moved {
        t = n.step(
            "axis_last",
            Op::Transpose(Transpose { perm: perm.clone() }),
            vec![t],
        )?;
    }
    let rows: Vec<usize> = perm.iter().map(|&d| dims[d]).collect();
    let len = dims[axis];
    // [..., 1, n] broadcast to [..., n, n]: row j of each matrix is the whole row.
    let mut single = rows.clone();
    single.insert(r - 1, 1);
    t = n.step("row", Op::Reshape(Reshape { shape: single }), vec![t])?;
    let mut square = rows.clone();
    square.insert(r - 1, len);
    t = n.step("rows", Op::Expand(Expand { shape: square }), vec![t])?;
    // Element (j, i) is kept where i − j ≤ 0 (< 0 exclusive), or ≥ 0 (> 0) in reverse.
    let k = match (reverse, exclusive) {
        (false, false) | (true, false) => 0,
        (false, true) => -1,
        (true, true) => 1,
    };
    t = n.step("included", Op::Trilu(Trilu { upper: reverse, k }), vec![t])?;
    let sum = Op::Reduce(Reduce {
        kind: ReduceKind::Sum,
        axes: vec![r],
        keep_dims: false,
    });
    let last_step = moved || !dtype.is_float();
    if !last_step {
        return n.emit(sum, vec![t]);
    }
    t = n.step("sum", sum, vec![t])?;
    if moved {
        let mut inverse = vec![0; r];
        for (k, &d) in perm.iter().enumerate() {
            inverse[d] = k;
        }
        let back = Op::Transpose(Transpose { perm: inverse });
        if dtype.is_float() {
            return n.emit(back, vec![t]);
        }
        t = n.step("axis_back", back, vec![t])?;
    }
    n.emit(Op::Cast(Cast { to: dtype }), vec![t])
}
