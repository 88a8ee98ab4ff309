//! Scaled dot-product attention, `softmax(scale · q·kᵀ + mask) · v` over the last two
//! dimensions: inputs `q` `[..., s, d]`, `k` `[..., t, d]`, `v` `[..., t, dv]` (the same
//! leading dimensions) and an optional additive `mask` broadcasting to `[..., s, t]`;
//! output `[..., s, dv]`. ONNX's Attention (opset 23) for 4-D inputs; made by
//! `passes::recognize_attention` from the products and softmax exporters write (and
//! that ONNX's Attention is imported as: `import`). An anchor: one fused kernel where
//! the target holds its tiles. RotaryEmbedding, the positions attention's queries and
//! keys are rotated by, is imported here too (`rotary`), as ops weft has.

mod import;
mod rotary;

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::OnnxOp;
use super::shapes::{arity, broadcast, float, same_dtype};
use super::{Anchor, ExportNode, IndexUse, Inline, OpDef, Role};
use crate::tensor::Tensor;

/// An attention's attributes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attention {
    pub scale: f64,
    /// Query `i` sees keys `j ≤ i` only.
    pub causal: bool,
    /// A row whose softmax is NaN (every score -inf) gives zeros, as PyTorch's exported
    /// `Where(IsNaN(p), 0, p)` does.
    pub guard: bool,
}

impl OpDef for Attention {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        use super::symbolic::Carry;
        // Each query row is computed from its own row and every key: rows carry the
        // symbol where the queries (and a mask's rows) do and the keys and values do not.
        let r = x.output.shape.len();
        if x.dims.len() > 2 && (!x.dims[1].is_empty() || !x.dims[2].is_empty()) {
            return Carry::Refused(
                "its keys or values carry the symbolic dimension (weft bounds the queries' only)"
                    .into(),
            );
        }
        match x.elementwise() {
            Carry::Rows(dims) if dims.iter().any(|d| d.axis == r - 1) => {
                Carry::Refused("its mask carries the symbolic dimension along the keys".into())
            }
            carry => carry,
        }
    }

    fn name(&self) -> &'static str {
        "Attention"
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(scale={}", self.scale)?;
        if self.causal {
            f.write_str(", causal")?;
        }
        if self.guard {
            f.write_str(", nan guard")?;
        }
        f.write_str(")")
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 3, 4)?;
        same_dtype(&inputs[..3])?;
        let (q, k, v) = (&inputs[0].shape, &inputs[1].shape, &inputs[2].shape);
        let r = q.len();
        if r < 3 || k.len() != r || v.len() != r {
            return Err(format!(
                "q {q:?}, k {k:?} and v {v:?} must be of one rank, 3 or more"
            ));
        }
        if k[..r - 2] != q[..r - 2] || v[..r - 2] != q[..r - 2] {
            return Err(format!(
                "q {q:?}, k {k:?} and v {v:?} must have the same leading dimensions"
            ));
        }
        if k[r - 1] != q[r - 1] || v[r - 2] != k[r - 2] {
            return Err(format!(
                "q {q:?}, k {k:?}, v {v:?}: q and k need one head size, k and v one length"
            ));
        }
        let mut scores = q[..r - 1].to_vec();
        scores.push(k[r - 2]);
        if let Some(m) = inputs.get(3) {
            float(m, 3)?;
            if broadcast(&m.shape, &scores).as_deref() != Some(&scores[..]) {
                return Err(format!(
                    "the mask `{}` {:?} does not broadcast to the scores {scores:?}",
                    m.name, m.shape
                ));
            }
        }
        let mut shape = q[..r - 1].to_vec();
        shape.push(v[r - 1]);
        Ok((shape, inputs[0].dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        attention(x, self.scale, self.causal, self.guard)
    }

    fn role(&self) -> Role<'_> {
        Role::Anchor(Anchor::Attention(self))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        // ONNX's Attention reads 3-D inputs as `[batch, seq, heads · size]`; weft's
        // leading dimensions are batch and heads: 4-D only. (The NaN guard needs
        // nothing written: since its errata ONNX's op gives zeros for a row its mask
        // hides entirely. `is_causal` with no cache is the flag's `j ≤ i`.)
        let rank = node.output.shape.len();
        if rank != 4 {
            return Err(format!(
                "an Attention of rank {rank} (ONNX's Attention takes [batch, heads, seq, size])"
            ));
        }
        node.float("scale", self.scale);
        node.int("is_causal", i64::from(self.causal));
        // ONNX's Attention came with opset 23.
        node.needs_opset(23);
        Ok(())
    }

    fn macs(&self, inputs: &[&Tensor], output: &Tensor) -> f64 {
        // Q·Kᵀ (s·t·d a head) and P·V (s·t·dv a head).
        let (q, k) = (&inputs[0].shape, &inputs[1].shape);
        let r = k.len();
        let (t, d) = (k[r - 2] as f64, q[r - 1] as f64);
        let scores = inputs[0].numel() as f64 / d * t;
        scores * d + output.numel() as f64 * t
    }

    fn index_use(&self, _: usize, _: &[&Tensor]) -> IndexUse {
        IndexUse::Data
    }
}

/// ONNX's Attention and RotaryEmbedding (both new in opset 23), as sub-graphs of ops
/// weft has.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("Attention", &[23], import::import),
    OnnxOp::new("RotaryEmbedding", &[23], rotary::import),
];

/// `softmax(scale · q·kᵀ + mask) · v` per leading index, in float64; a causal mask
/// masks with -inf, and a guarded row of all -inf gives zeros.
fn attention(x: &[&ArrayD<f64>], scale: f64, causal: bool, guard: bool) -> ArrayD<f64> {
    let (q, k, v) = (x[0], x[1], x[2]);
    let r = q.ndim();
    let (s, d, t, dv) = (
        q.shape()[r - 2],
        q.shape()[r - 1],
        k.shape()[r - 2],
        v.shape()[r - 1],
    );
    let lead: Vec<usize> = q.shape()[..r - 2].to_vec();
    let count: usize = lead.iter().product();
    let flat = |a: &ArrayD<f64>, rows: usize, cols: usize| {
        a.to_shape((count, rows, cols))
            .expect("inference checked the shapes")
            .to_owned()
    };
    let (q, k, v) = (flat(q, s, d), flat(k, t, d), flat(v, t, dv));
    let mut scores_shape = lead.clone();
    scores_shape.extend([s, t]);
    let mask = x.get(3).map(|m| {
        let b = m
            .broadcast(IxDyn(&scores_shape))
            .expect("inference checked the broadcast");
        b.to_shape((count, s, t))
            .expect("a broadcast view reshapes")
            .to_owned()
    });
    let mut out = Vec::with_capacity(count * s * dv);
    for z in 0..count {
        for i in 0..s {
            let scores: Vec<f64> = (0..t)
                .map(|j| {
                    if causal && j > i {
                        return f64::NEG_INFINITY;
                    }
                    let dot: f64 = (0..d).map(|e| q[[z, i, e]] * k[[z, j, e]]).sum();
                    dot * scale + mask.as_ref().map_or(0.0, |m| m[[z, i, j]])
                })
                .collect();
            let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let p: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = p.iter().sum();
            for c in 0..dv {
                let acc: f64 = (0..t).map(|j| p[j] * v[[z, j, c]]).sum();
                let y = acc / sum;
                out.push(if guard && y.is_nan() { 0.0 } else { y });
            }
        }
    }
    let mut shape = lead;
    shape.extend([s, dv]);
    ArrayD::from_shape_vec(IxDyn(&shape), out).expect("sizes match")
}
