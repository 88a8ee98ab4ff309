//! Dilated pooling (any of 1 to 3 spatial axes) as gathers and reductions: along each
//! axis, a Gather of the `k` taps every output position reads (`[k, O]` constant
//! indices, so the taps become an axis of their own), the taps in the padding replaced
//! by −∞ (max) or 0 (average) with a Where, and a ReduceMax or ReduceSum over the taps.
//! The window is a box, so its maximum and its sum factor per axis; an average then
//! divides by the product of the per-axis counts (the taps inside the input, or, with
//! `count_include_pad`, inside input and explicit padding), a constant.

use weft_ir::dtype::DType;

use super::{Out, PoolKind, put};
use crate::op::onnx::{OnnxError, OnnxNode};
use crate::op::shapes::window_out;
use crate::op::{Binary, Gather, Op, Reduce, ReduceKind};
use crate::tensor::TensorId;

/// A pooling window's geometry, ONNX's attributes resolved.
pub(super) struct Window {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    /// The padding at the beginning of each axis, then at the end.
    pub pads: Vec<usize>,
    pub ceil_mode: bool,
    pub count_include_pad: bool,
}

/// Adds the pooling of `x` (`[N, C, spatial...]`), as the node's output or a step
/// (`to`).
pub(super) fn pool(
    n: &mut dyn OnnxNode,
    x: TensorId,
    kind: PoolKind,
    w: &Window,
    to: Out,
) -> Result<Option<TensorId>, OnnxError> {
    let xs = n.shape(x);
    let dims = w.kernel.len();
    let dtype = n.tensor(x).dtype;
    if !dtype.is_float() {
        return Err(n.err(format!("input 0 is {dtype:?}: weft pools float tensors")));
    }
    let mut y = x;
    let mut counts: Vec<Vec<f32>> = Vec::with_capacity(dims);
    let mut outs = Vec::with_capacity(dims);
    for a in 0..dims {
        let ax = 2 + a;
        let (len, k, s, d) = (xs[ax], w.kernel[a], w.strides[a], w.dilations[a]);
        let (lo, hi) = (w.pads[a], w.pads[a + dims]);
        if lo >= k || hi >= k {
            return Err(n.err(format!(
                "pads {:?} must be smaller than the window {:?}",
                w.pads, w.kernel
            )));
        }
        let Some(out) = window_out(len, k, s, d, lo, hi, w.ceil_mode) else {
            return Err(n.err(format!(
                "the window {:?} (dilations {:?}, strides {:?}) does not fit the input {xs:?} padded by {:?}",
                w.kernel, w.dilations, w.strides, w.pads
            )));
        };
        let mut idx = Vec::with_capacity(k * out);
        let mut inside = Vec::with_capacity(k * out);
        let mut count = vec![0.0f32; out];
        for t in 0..k {
            for (o, c) in count.iter_mut().enumerate() {
                let z = (o * s + t * d) as i64 - lo as i64;
                let ok = (0..len as i64).contains(&z);
                idx.push(z.clamp(0, len as i64 - 1) as f32);
                inside.push(if ok { 1.0 } else { 0.0 });
                let counted = if w.count_include_pad {
                    z < (len + hi) as i64
                } else {
                    ok
                };
                if counted {
                    *c += 1.0;
                }
            }
        }
        if count.contains(&0.0) {
            return Err(n.err(format!(
                "a window of {:?} (dilations {:?}) lies wholly in the padding {:?}",
                w.kernel, w.dilations, w.pads
            )));
        }
        let idx = n.add_constant(&format!("axis{ax}_taps"), vec![k, out], idx, DType::I32);
        let mut g = n.step(
            &format!("axis{ax}_gather"),
            Op::Gather(Gather { axis: ax }),
            vec![y, idx],
        )?;
        if inside.contains(&0.0) {
            let mut mshape = vec![k, out];
            mshape.extend(std::iter::repeat_n(1, dims - 1 - a));
            let mask = n.add_constant(&format!("axis{ax}_inside"), mshape, inside, DType::Bool);
            let fill = match kind {
                PoolKind::Max => f32::NEG_INFINITY,
                PoolKind::Average => 0.0,
            };
            let fill = n.add_constant(&format!("axis{ax}_fill"), vec![], vec![fill], dtype);
            g = n.step(&format!("axis{ax}_padded"), Op::Where, vec![mask, g, fill])?;
        }
        let reduce = Reduce {
            kind: match kind {
                PoolKind::Max => ReduceKind::Max,
                PoolKind::Average => ReduceKind::Sum,
            },
            axes: vec![ax],
            keep_dims: false,
        };
        let last = a + 1 == dims && kind == PoolKind::Max;
        if last {
            return put(n, to, "pool", Op::Reduce(reduce), vec![g]);
        }
        y = n.step(&format!("axis{ax}_reduce"), Op::Reduce(reduce), vec![g])?;
        counts.push(count);
        outs.push(out);
    }
    // The average: the sum over the box by the product of the per-axis counts.
    let total: usize = outs.iter().product();
    let divisor: Vec<f32> = (0..total)
        .map(|mut i| {
            let mut p = 1.0f32;
            for a in (0..dims).rev() {
                p *= counts[a][i % outs[a]];
                i /= outs[a];
            }
            p
        })
        .collect();
    let divisor = n.add_constant("counts", outs, divisor, dtype);
    put(n, to, "pool", Op::Binary(Binary::Div), vec![y, divisor])
}
