//! ONNX's Pad: each dimension cropped where its pad is negative, then grown by its
//! positive pads, the new elements a constant (`constant`), the input mirrored about its
//! edge element (`reflect`), the edge element repeated (`edge`) or the input repeated
//! from its other end (`wrap`). Cropping comes first, so a dimension cropped at one end
//! and padded at the other reflects or repeats the cropped input (as ONNX's reference
//! does). The constant is a value, or a scalar input computed at run time. Exporters
//! write it for convolutions' explicit padding and for windows that do
//! not divide (Swin's window partition).

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::prelude::*;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::arity;
use super::{Epilogue, ExportNode, IndexUse, Inline, Op, OpDef, Role};
use crate::tensor::Tensor;

/// What fills the padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// A constant ([`Pad::value`]).
    Constant,
    /// The input mirrored about its first and last elements (`[1 2 3] → 3 2 [1 2 3] 2 1`).
    Reflect,
    /// The first and last elements repeated.
    Edge,
    /// The input repeated from its other end (`[1 2 3] → 2 3 [1 2 3] 1 2`).
    Wrap,
}

impl PadMode {
    /// ONNX's `mode` string.
    pub fn name(self) -> &'static str {
        match self {
            PadMode::Constant => "constant",
            PadMode::Reflect => "reflect",
            PadMode::Edge => "edge",
            PadMode::Wrap => "wrap",
        }
    }
}

/// A resolved Pad: per dimension, the pad before and after (negative: a crop).
#[derive(Clone, Debug, PartialEq)]
pub struct Pad {
    pub mode: PadMode,
    pub begin: Vec<i64>,
    pub end: Vec<i64>,
    /// The constant of [`PadMode::Constant`] (0 unless given), where no second input
    /// (a scalar computed at run time) gives it.
    pub value: f64,
}

impl Pad {
    /// Per dimension of an input of `dims`: the crop at the beginning, the size left after
    /// both crops, and the pad at the beginning.
    fn spans(&self, dims: &[usize]) -> Vec<(i64, i64, i64)> {
        (0..dims.len())
            .map(|d| {
                let (b, e) = (self.begin[d], self.end[d]);
                let kept = dims[d] as i64 + b.min(0) + e.min(0);
                (-b.min(0), kept, b.max(0))
            })
            .collect()
    }

    /// The input element an output index `i` of one dimension reads (`None`: the
    /// constant), for a dimension with `spans`.
    fn source(&self, i: i64, (crop, kept, pad): (i64, i64, i64)) -> Option<i64> {
        let j = i - pad;
        let j = match self.mode {
            PadMode::Constant if (0..kept).contains(&j) => j,
            PadMode::Constant => return None,
            PadMode::Edge => j.clamp(0, kept - 1),
            PadMode::Wrap => j.rem_euclid(kept),
            PadMode::Reflect if kept == 1 => 0,
            PadMode::Reflect => {
                let p = j.rem_euclid(2 * (kept - 1));
                if p < kept { p } else { 2 * (kept - 1) - p }
            }
        };
        Some(j + crop)
    }
}

impl OpDef for Pad {
    fn name(&self) -> &'static str {
        "Pad"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(mode={}, begin={:?}, end={:?}",
            self.mode.name(),
            self.begin,
            self.end
        )?;
        if self.mode == PadMode::Constant {
            write!(f, ", value={}", self.value)?;
        }
        f.write_str(")")
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 1, 2)?;
        let x = inputs[0];
        if let Some(v) = inputs.get(1)
            && (v.numel() != 1 || v.dtype != x.dtype || self.mode != PadMode::Constant)
        {
            return Err(format!(
                "input 1 `{}` (the constant) must be one {} value, for constant mode",
                v.name, x.dtype
            ));
        }
        let r = x.shape.len();
        if self.begin.len() != r || self.end.len() != r {
            return Err(format!(
                "pads {:?} and {:?} must each give the {r} dimensions of `{}` {:?}",
                self.begin, self.end, x.name, x.shape
            ));
        }
        let mut shape = Vec::with_capacity(r);
        for (d, &n) in x.shape.iter().enumerate() {
            let (b, e) = (self.begin[d], self.end[d]);
            let kept = n as i64 + b.min(0) + e.min(0);
            if kept < 1 {
                return Err(format!(
                    "dimension {d} of `{}` {:?} is cropped by {} and {}: nothing is left",
                    x.name,
                    x.shape,
                    -b.min(0),
                    -e.min(0)
                ));
            }
            shape.push((kept + b.max(0) + e.max(0)) as usize);
        }
        Ok((shape, x.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        let dims = x[0].shape();
        let spans = self.spans(dims);
        let shape: Vec<usize> = spans
            .iter()
            .enumerate()
            .map(|(d, &(_, kept, pad))| (kept + pad + self.end[d].max(0)) as usize)
            .collect();
        ArrayD::from_shape_fn(IxDyn(&shape), |ix| {
            let at: Option<Vec<usize>> = (0..shape.len())
                .map(|d| self.source(ix[d] as i64, spans[d]).map(|j| j as usize))
                .collect();
            let value = x
                .get(1)
                .map_or(self.value, |v| v.iter().copied().next().unwrap_or(0.0));
            at.map_or(value, |at| x[0][IxDyn(&at)])
        })
    }

    fn role(&self) -> Role<'_> {
        Role::Injective(Epilogue::Never)
    }

    fn inline(&self, x: &dyn Inline, idx: &[Expr]) -> Option<Expr> {
        let spans = self.spans(&x.input_tensor(0).shape);
        let mut inside = Vec::new();
        let at: Vec<Expr> = idx
            .iter()
            .zip(&spans)
            .enumerate()
            .map(|(d, (i, &(crop, kept, pad)))| {
                let j = i.clone() - pad;
                let last = kept - 1;
                let j = match self.mode {
                    PadMode::Constant => {
                        if pad > 0 || self.end[d] > 0 {
                            inside.push(j.clone().ge(0).and(j.clone().lt(kept)));
                        }
                        j
                    }
                    PadMode::Edge => j,
                    PadMode::Wrap => j.floormod(kept),
                    PadMode::Reflect if kept == 1 => Expr::int(0),
                    PadMode::Reflect => {
                        let p = j.floormod(2 * last);
                        te::if_then_else(p.clone().lt(kept), p.clone(), Expr::int(2 * last) - p)
                    }
                };
                // Clamped, so that the prover sees every load in bounds (a padded
                // element's load is discarded by the select below).
                let j = j.max(0).min(last);
                if crop == 0 { j } else { j + crop }
            })
            .collect();
        let v = x.input(0, &at);
        if inside.is_empty() {
            return Some(v);
        }
        let value = if x.input_count() > 1 {
            let rank = x.input_tensor(1).shape.len();
            x.input(1, &vec![Expr::int(0); rank])
        } else {
            Expr::f32(self.value as f32)
        };
        Some(te::if_then_else(Expr::all(inside), v, value))
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        if node.inputs.len() > 1 {
            // The export writes constant inputs after the data inputs, and ONNX's
            // `pads` comes before `constant_value`.
            return Err("a Pad whose constant is computed is not written yet".into());
        }
        node.string("mode", self.mode.name());
        node.const_ints("pads", [&self.begin[..], &self.end[..]].concat());
        if self.mode == PadMode::Constant && node.inputs.len() == 1 {
            node.const_scalar("constant_value", self.value);
        }
        if self.mode == PadMode::Wrap {
            node.needs_opset(19);
        }
        Ok(())
    }

    fn macs(&self, _: &[&Tensor], output: &Tensor) -> f64 {
        output.numel() as f64
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Through
    }
}

/// ONNX's Pad: `pads` (and the constant) as inputs that fold to constants, the optional
/// `axes` of opset 18, `wrap` from 19; `pads` as an attribute at opset 2.
pub(super) const ONNX: &[OnnxOp] = &[OnnxOp::new("Pad", &[2, 11, 13, 18, 19, 21, 23], import)];

fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let dims = n.shape(x);
    let r = dims.len();
    let mode = match n.string("mode", "constant")?.as_str() {
        "constant" => PadMode::Constant,
        "reflect" => PadMode::Reflect,
        "edge" => PadMode::Edge,
        "wrap" if n.opset() >= 19 => PadMode::Wrap,
        other => {
            return Err(n.attr_err(
                "mode",
                format!("`{other}` is not constant, reflect or edge (or wrap, from opset 19)"),
            ));
        }
    };
    // Opset 2 has `pads` and `value` as attributes; from 11 they are inputs.
    let (pads, value) = match n.ints("pads")? {
        Some(p) => (p, n.float("value", 0.0)?),
        None => {
            let pads = n
                .int_input(1, "pads")?
                .ok_or_else(|| n.err("input 1 (pads) is missing"))?;
            // A computed constant is read by the kernel (an input of the node).
            let value = if n.has_input(2) && n.is_computed(2) {
                0.0
            } else {
                match n.constant(2)? {
                    None => 0.0,
                    Some(c) => c.scalar().ok_or_else(|| {
                        n.err(format!(
                            "input 2 (constant_value) has shape {:?}, not one value",
                            c.dims
                        ))
                    })?,
                }
            };
            (pads, value)
        }
    };
    let axes: Vec<usize> = match n.int_input(3, "axes")? {
        None => (0..r).collect(),
        Some(a) => {
            let mut seen = vec![false; r];
            let mut axes = Vec::with_capacity(a.len());
            for &v in &a {
                let d = n.axis("axes", v, r, false)?;
                if std::mem::replace(&mut seen[d], true) {
                    return Err(n.err(format!("input 3 (axes) {a:?} repeats axis {v}")));
                }
                axes.push(d);
            }
            axes
        }
    };
    if pads.len() != 2 * axes.len() {
        return Err(n.err(format!(
            "pads {pads:?} must hold two values for each of the {} axes padded",
            axes.len()
        )));
    }
    let (mut begin, mut end) = (vec![0; r], vec![0; r]);
    for (k, &d) in axes.iter().enumerate() {
        let (b, e) = (pads[k], pads[k + axes.len()]);
        let limit = super::onnx::MAX_WINDOW;
        if b.abs() > limit || e.abs() > limit {
            return Err(n.err(format!("pads {pads:?}: weft pads by at most {limit}")));
        }
        begin[d] = b;
        end[d] = e;
    }
    if mode != PadMode::Constant {
        for d in 0..r {
            let kept = dims[d] as i64 + begin[d].min(0) + end[d].min(0);
            let grows = begin[d] > 0 || end[d] > 0;
            if grows && kept < 1 {
                return Err(n.err(format!(
                    "dimension {d} of {dims:?} is cropped to nothing and then padded in {} mode",
                    mode.name()
                )));
            }
        }
    }
    if begin.iter().chain(&end).all(|&p| p == 0) {
        return n.emit(Op::Identity, vec![x]);
    }
    let mut inputs = vec![x];
    if mode == PadMode::Constant && n.has_input(2) && n.is_computed(2) && !n.has("pads") {
        inputs.push(n.data(2)?);
    }
    let op = Op::Pad(Pad {
        mode,
        begin,
        end,
        value,
    });
    n.emit(op, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(mode: PadMode, begin: i64, end: i64) -> Vec<f64> {
        let x = ArrayD::from_shape_vec(IxDyn(&[4]), vec![1., 2., 3., 4.]).unwrap();
        let p = Pad {
            mode,
            begin: vec![begin],
            end: vec![end],
            value: -1.0,
        };
        p.reference(&[&x]).iter().copied().collect()
    }

    #[test]
    fn every_mode_fills_as_numpy_does() {
        assert_eq!(
            row(PadMode::Constant, 2, 1),
            [-1., -1., 1., 2., 3., 4., -1.]
        );
        assert_eq!(row(PadMode::Reflect, 2, 1), [3., 2., 1., 2., 3., 4., 3.]);
        assert_eq!(row(PadMode::Edge, 2, 1), [1., 1., 1., 2., 3., 4., 4.]);
        assert_eq!(row(PadMode::Wrap, 2, 1), [3., 4., 1., 2., 3., 4., 1.]);
        // Further than the input is long: reflected again.
        assert_eq!(
            row(PadMode::Reflect, 5, 0),
            [2., 3., 4., 3., 2., 1., 2., 3., 4.]
        );
    }

    #[test]
    fn negative_pads_crop_first() {
        assert_eq!(row(PadMode::Constant, -1, -2), [2.]);
        // Cropped to [2 3 4], then reflected about 2.
        assert_eq!(row(PadMode::Reflect, -1, 0), [2., 3., 4.]);
        assert_eq!(row(PadMode::Reflect, -1, 2), [2., 3., 4., 3., 2.]);
        assert_eq!(row(PadMode::Edge, 1, -3), [1., 1.]);
    }
}
