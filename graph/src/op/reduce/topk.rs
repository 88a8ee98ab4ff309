//! ONNX's TopK from comparisons and sums, for the short axes exporters sort (a few
//! logits, the boxes of a detector head): along the axis (moved last), element `i`'s
//! rank is how many elements come before it — those greater (smaller where `largest=0`),
//! and those equal at a lower index, so that ties keep the lower index first, as ONNX
//! specifies — a ReduceSum over an `[n, n]` comparison that is never stored (the
//! comparisons are injective and read in the reduction). Output `p` is the element whose
//! rank is `p`: a ReduceSum over the axis of the element where the rank is `p` and 0
//! elsewhere (exactly one term, so the value is exact, infinities included), and the
//! same of its index. Outputs are sorted whether or not `sorted` asks (ONNX allows
//! either). NaNs are not ordered: a row holding one has no defined answer here.
//!
//! The cost is `n` comparisons per element: weft refuses axes longer than
//! [`MAX_AXIS`].

use weft_ir::dtype::DType;

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Binary, Cast, Expand, Op, Reshape, Transpose, Trilu};
use super::{Reduce, ReduceKind};
use crate::tensor::TensorId;

/// The longest axis weft takes the top elements of.
pub const MAX_AXIS: usize = 1 << 14;

/// TopK (`k` an attribute before opset 10, a constant input from; `axis`, and from 11
/// `largest` and `sorted`): Values and Indices.
pub(super) fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dims = n.shape(x);
    let r = dims.len();
    if r == 0 {
        return Err(n.err("input 0 is a scalar: TopK needs an axis"));
    }
    let axis = n.int("axis", -1)?;
    let axis = n.axis("axis", axis, r, false)?;
    let largest = n.flag("largest", true)?;
    n.flag("sorted", true)?;
    let len = dims[axis];
    let k = if n.opset() < 10 {
        n.has("k")
            .then(|| n.int("k", 0))
            .transpose()?
            .map(|k| vec![k])
    } else {
        n.int_input(1, "K")?
    };
    let k = match k {
        Some(v) if v.len() == 1 => v[0],
        Some(v) => return Err(n.err(format!("K holds {v:?}, not one value"))),
        None => return Err(n.err("K is missing")),
    };
    if k < 1 || k > len as i64 {
        return Err(n.err(format!(
            "K = {k}: weft takes 1 to {len} (the length of axis {axis}; an empty output is not a weft tensor)"
        )));
    }
    if len > MAX_AXIS {
        return Err(n.err(format!(
            "axis {axis} has {len} elements: weft's TopK compares every pair and takes axes of at most {MAX_AXIS}"
        )));
    }
    let k = k as usize;
    let dtype = n.tensor(x).dtype;
    let mut t = x;
    if !dtype.is_float() {
        t = n.step("as_float", Op::Cast(Cast { to: DType::F32 }), vec![t])?;
    }
    let fdt = n.tensor(t).dtype;
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
    // x_i as a column [..., n, 1] and x_j as a row [..., 1, n].
    let with = |at: usize| {
        let mut s = rows.clone();
        s.insert(at, 1);
        Op::Reshape(Reshape { shape: s })
    };
    let col = n.step("column", with(r), vec![t])?;
    let row = n.step("row", with(r - 1), vec![t])?;
    let before = if largest {
        Binary::Greater
    } else {
        Binary::Less
    };
    let ahead = n.step("ahead", Op::Binary(before), vec![row, col])?;
    let tied = n.step("tied", Op::Binary(Binary::Equal), vec![row, col])?;
    // 1 where j < i: a lower index that ties comes first.
    let one = n.add_constant("one", vec![1, 1], vec![1.0], DType::F32);
    let ones = n.step(
        "ones",
        Op::Expand(Expand {
            shape: vec![len, len],
        }),
        vec![one],
    )?;
    let lower = n.step(
        "lower",
        Op::Trilu(Trilu {
            upper: false,
            k: -1,
        }),
        vec![ones],
    )?;
    let zero = n.add_constant("zero", vec![], vec![0.0], DType::F32);
    let tie_first = n.step("tie_first", Op::Where, vec![tied, lower, zero])?;
    let one = n.add_constant("unit", vec![], vec![1.0], DType::F32);
    let first = n.step("first", Op::Where, vec![ahead, one, tie_first])?;
    let rank = n.step(
        "rank",
        Op::Reduce(Reduce {
            kind: ReduceKind::Sum,
            axes: vec![r],
            keep_dims: true,
        }),
        vec![first],
    )?;
    let places = n.add_constant(
        "places",
        vec![k],
        (0..k).map(|p| p as f32).collect(),
        DType::F32,
    );
    let picked = n.step("picked", Op::Binary(Binary::Equal), vec![rank, places])?;
    let along = || {
        Op::Reduce(Reduce {
            kind: ReduceKind::Sum,
            axes: vec![r - 1],
            keep_dims: false,
        })
    };
    let zero_x = n.add_constant("zero_value", vec![], vec![0.0], fdt);
    let v = n.step("value_at", Op::Where, vec![picked, col, zero_x])?;
    let v = n.step("values", along(), vec![v])?;
    let iota = n.add_constant(
        "iota",
        vec![len, 1],
        (0..len).map(|i| i as f32).collect(),
        DType::F32,
    );
    let i = n.step("index_at", Op::Where, vec![picked, iota, zero])?;
    let i = n.step("indices", along(), vec![i])?;
    let back = moved.then(|| {
        let mut inverse = vec![0; r];
        for (k, &d) in perm.iter().enumerate() {
            inverse[d] = k;
        }
        Op::Transpose(Transpose { perm: inverse })
    });
    let values_last = (!dtype.is_float()).then_some(Op::Cast(Cast { to: dtype }));
    finish(n, 0, v, [back.clone(), values_last])?;
    finish(n, 1, i, [back, Some(Op::Cast(Cast { to: DType::I32 }))])
}

/// Output `out` from `t` through the ops given (the last one the output's node; an
/// Identity where none is).
fn finish(
    n: &mut dyn OnnxNode,
    out: usize,
    mut t: TensorId,
    ops: [Option<Op>; 2],
) -> Result<(), OnnxError> {
    let mut ops: Vec<Op> = ops.into_iter().flatten().collect();
    let last = ops.pop().unwrap_or(Op::Identity);
    for (s, op) in ops.into_iter().enumerate() {
        t = n.step(&format!("out{out}_{s}"), op, vec![t])?;
    }
    n.emit_output(out, last, vec![t])
}
