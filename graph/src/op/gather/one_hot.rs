//! ONNX's OneHot and EyeLike, as comparisons of indices with constant ranges.
//!
//! OneHot: `indices` with a new axis of `depth` at `axis`, `values[1]` where the new
//! axis's index equals the index and `values[0]` elsewhere (a float index truncated
//! toward zero). Indices are compared in f32
//! (exact to 2²⁴, far past any depth a tensor has); from opset 11 a negative index
//! counts from the end, and an index out of range gives a row of `values[0]`.

use weft_ir::dtype::DType;

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Binary, Cast, Gather, Op, Reshape};

/// The largest `depth` weft takes (the iota constant has this many elements).
const MAX_DEPTH: f64 = (1 << 24) as f64;

/// OneHot (`axis` −1 unless given; `depth` a constant).
pub(in super::super) fn import_one_hot(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let idx = n.data(0)?;
    let xs = n.shape(idx);
    let r = xs.len();
    let axis = n.int("axis", -1)?;
    let axis = n.axis("axis", axis, r + 1, false)?;
    let depth = match n.constant(1)? {
        Some(c) => c.scalar(),
        None => None,
    };
    let depth = match depth {
        Some(d) if (1.0..=MAX_DEPTH).contains(&d) => d.trunc() as usize,
        Some(d) => {
            return Err(n.err(format!(
                "input 1 (depth) is {d}: weft takes 1 to {MAX_DEPTH}"
            )));
        }
        None => return Err(n.err("input 1 (depth) does not hold one value")),
    };
    let values = n.data(2)?;
    if n.tensor(values).numel() != 2 || n.shape(values).len() != 1 {
        return Err(n.err(format!(
            "input 2 (values) has shape {:?}, not [2]: [off_value, on_value]",
            n.shape(values)
        )));
    }
    // A float index is truncated toward zero, as ONNX Runtime casts it.
    let idx = if n.tensor(idx).dtype.is_float() {
        n.step("truncated", Op::Cast(Cast { to: DType::I32 }), vec![idx])?
    } else {
        idx
    };
    let idx = n.step("as_f32", Op::Cast(Cast { to: DType::F32 }), vec![idx])?;
    let idx = if n.opset() >= 11 {
        let zero = n.add_constant("zero", vec![], vec![0.0], DType::F32);
        let d = n.add_constant("depth", vec![], vec![depth as f32], DType::F32);
        let negative = n.step("negative", Op::Binary(Binary::Less), vec![idx, zero])?;
        let wrapped = n.step("wrapped", Op::Binary(Binary::Add), vec![idx, d])?;
        n.step("index", Op::Where, vec![negative, wrapped, idx])?
    } else {
        idx
    };
    let mut shape = xs.clone();
    shape.insert(axis, 1);
    let idx = n.step("unsqueezed", Op::Reshape(Reshape { shape }), vec![idx])?;
    let mut iota_shape = vec![1; r + 1];
    iota_shape[axis] = depth;
    let iota = n.add_constant(
        "range",
        iota_shape,
        (0..depth).map(|i| i as f32).collect(),
        DType::F32,
    );
    let hit = n.step("hit", Op::Binary(Binary::Equal), vec![idx, iota])?;
    let off = n.add_constant("off_index", vec![], vec![0.0], DType::I32);
    let on = n.add_constant("on_index", vec![], vec![1.0], DType::I32);
    let gather = Op::Gather(Gather { axis: 0 });
    let off = n.step("off_value", gather.clone(), vec![values, off])?;
    let on = n.step("on_value", gather, vec![values, on])?;
    n.emit(Op::Where, vec![hit, on, off])
}

/// EyeLike (`dtype` the input's unless given, `k` 0): ones where `j − i = k` in a
/// matrix of the input's shape, zeros elsewhere; the input's values are not read.
pub(in super::super) fn import_eye_like(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let xs = n.shape(x);
    let [rows, cols] = xs[..] else {
        return Err(n.err(format!(
            "input 0 has shape {xs:?}: EyeLike takes a matrix (rank 2)"
        )));
    };
    let dtype = if n.has("dtype") {
        let code = n.int("dtype", 1)?;
        n.element_type(code).ok_or_else(|| {
            n.attr_err(
                "dtype",
                format!("{}: weft holds no such tensors", n.element_type_name(code)),
            )
        })?
    } else {
        n.tensor(x).dtype
    };
    let k = n.int("k", 0)?;
    let values = (0..rows * cols)
        .map(|e| {
            let (i, j) = ((e / cols) as i64, (e % cols) as i64);
            if j - i == k { 1.0 } else { 0.0 }
        })
        .collect();
    let eye = n.add_constant("eye", vec![rows, cols], values, dtype);
    n.emit(Op::Identity, vec![eye])
}
