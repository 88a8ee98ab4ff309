//! Layer normalization over the dimensions from `axis` on: `(x − mean) /
//! sqrt(var + epsilon) · scale (+ bias)`; inputs `x`, `scale`, optional `bias` (each
//! broadcast to the normalized dimensions). Its RMS variant (`rms`, ONNX's
//! RMSNormalization of opset 23, Llama's and T5's norm) takes no mean: `x /
//! sqrt(mean(x²) + epsilon) · scale`. A normalization of rows, run by the rows
//! template; passes make the decomposed forms exporters write into one node. ONNX's
//! InstanceNormalization and GroupNormalization are imported here too: a layer norm over
//! the right dimensions, then their per-channel (or per-group) scale and bias.

use std::fmt;

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;
use weft_ir::expr::Expr;

use super::onnx::{OnnxError, OnnxNode, OnnxOp};
use super::shapes::{arity, axis_of, broadcast, epsilon, float};
use super::{
    Binary, Cast, Expand, ExportNode, IndexUse, Inline, Op, OpDef, Reduce, ReduceKind, Reduction,
    Reshape, Role, Rows, Unary,
};
use crate::tensor::{Tensor, TensorId};

/// A layer norm's first normalized axis and epsilon, and whether it is the RMS norm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LayerNorm {
    pub axis: usize,
    pub epsilon: f64,
    /// Normalized by the root mean square, the mean not subtracted.
    pub rms: bool,
}

impl OpDef for LayerNorm {
    fn symbolic(&self, x: &super::symbolic::SymbolicIn<'_>) -> super::symbolic::Carry {
        use super::symbolic::Carry;
        if x.dims[0].iter().any(|d| d.axis >= self.axis) {
            return Carry::Refused(format!(
                "it normalizes over axes {}.. of `{}`, which hold the symbolic dimension: weft normalizes over static axes only",
                self.axis, x.inputs[0].name
            ));
        }
        if x.dims[1..].iter().any(|d| !d.is_empty()) {
            return Carry::Refused("its scale or bias holds the symbolic dimension".into());
        }
        x.same()
    }

    fn name(&self) -> &'static str {
        if self.rms {
            "RMSNormalization"
        } else {
            "LayerNormalization"
        }
    }

    fn fmt_attrs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(axis={}, epsilon={:e})", self.axis, self.epsilon)
    }

    fn infer(&self, inputs: &[&Tensor]) -> Result<(Vec<usize>, DType), String> {
        arity(inputs, 2, 3)?;
        float(inputs[0], 0)?;
        let x = inputs[0];
        axis_of(self.axis, x)?;
        epsilon(self.epsilon)?;
        let normalized = &x.shape[self.axis..];
        for (i, t) in inputs.iter().enumerate().skip(1) {
            float(t, i)?;
            if broadcast(&t.shape, normalized).as_deref() != Some(normalized) {
                return Err(format!(
                    "input {i} `{}` {:?} does not broadcast to the normalized dimensions {normalized:?}",
                    t.name, t.shape
                ));
            }
        }
        Ok((x.shape.clone(), x.dtype))
    }

    fn reference(&self, x: &[&ArrayD<f64>]) -> ArrayD<f64> {
        layer_norm(x, self.axis, self.epsilon, self.rms)
    }

    fn role(&self) -> Role<'_> {
        Role::Reduction(Reduction::Rows(Rows::LayerNorm(self)))
    }

    fn inline(&self, _: &dyn Inline, _: &[Expr]) -> Option<Expr> {
        None
    }

    fn export(&self, node: &mut ExportNode<'_>) -> Result<(), String> {
        node.int("axis", self.axis as i64);
        node.float("epsilon", self.epsilon);
        if self.rms {
            node.needs_opset(23);
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

fn layer_norm(x: &[&ArrayD<f64>], axis: usize, epsilon: f64, rms: bool) -> ArrayD<f64> {
    let shape = x[0].shape().to_vec();
    let normalized = &shape[axis..];
    let inner: usize = normalized.iter().product();
    let outer: usize = shape[..axis].iter().product();
    let flat = |a: &ArrayD<f64>| -> Vec<f64> {
        a.broadcast(IxDyn(normalized))
            .expect("checked by inference")
            .iter()
            .copied()
            .collect()
    };
    let scale = flat(x[1]);
    let bias = x.get(2).map(|b| flat(b));
    let data: Vec<f64> = x[0].iter().copied().collect();
    let mut out = Vec::with_capacity(data.len());
    for r in 0..outer {
        let row = &data[r * inner..(r + 1) * inner];
        let mean = if rms {
            0.0
        } else {
            row.iter().sum::<f64>() / inner as f64
        };
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / inner as f64;
        let k = 1.0 / (var + epsilon).sqrt();
        for (j, v) in row.iter().enumerate() {
            let b = bias.as_ref().map_or(0.0, |b| b[j]);
            out.push((v - mean) * k * scale[j] + b);
        }
    }
    ArrayD::from_shape_vec(IxDyn(&shape), out).expect("same element count")
}

/// ONNX's LayerNormalization (its `Mean` and `InvStdDev` outputs where used),
/// RMSNormalization, InstanceNormalization, GroupNormalization and
/// MeanVarianceNormalization.
pub(super) const ONNX: &[OnnxOp] = &[
    OnnxOp::new("GroupNormalization", &[18, 21], import_group),
    OnnxOp::new("InstanceNormalization", &[6, 22], import_instance),
    OnnxOp::new("LayerNormalization", &[17], import),
    OnnxOp::new("MeanVarianceNormalization", &[9, 13], import_mvn),
    OnnxOp::new("RMSNormalization", &[23], import_rms),
];

/// LayerNormalization: output 0 is one fused layer norm node whatever else the node
/// lists, so the single-output form every exporter writes stays on the rows template.
/// Where the `Mean` (output 1) or `InvStdDev` (output 2) statistics are used, they are
/// computed beside it from reductions weft has (below).
fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let r = n.shape(x).len();
    let axis = n.int("axis", -1)?;
    let axis = n.axis("axis", axis, r, false)?;
    let epsilon = n.float("epsilon", 1e-5)?;
    let stash = stash_type(n, n.tensor(x).dtype)?;
    let mut inputs = vec![x, n.data(1)?];
    inputs.extend(n.opt_data(2)?);
    n.emit(
        Op::LayerNorm(LayerNorm {
            axis,
            epsilon,
            rms: false,
        }),
        inputs,
    )?;
    if n.output_used(1) || n.output_used(2) {
        statistics(n, x, axis, epsilon, stash)?;
    }
    Ok(())
}

/// RMSNormalization (opset 23): `x / sqrt(mean(x²) + epsilon) · scale` over the
/// dimensions from `axis`, the scale broadcast to them; the RMS form of the layer norm.
fn import_rms(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let r = n.shape(x).len();
    let axis = n.int("axis", -1)?;
    let axis = n.axis("axis", axis, r, false)?;
    let epsilon = n.float("epsilon", 1e-5)?;
    stash_type(n, n.tensor(x).dtype)?;
    let scale = n.data(1)?;
    n.emit(
        Op::LayerNorm(LayerNorm {
            axis,
            epsilon,
            rms: true,
        }),
        vec![x, scale],
    )
}

/// The element type `stash_type` names (FLOAT unless given): the precision of the
/// statistics and the type of LayerNormalization's `Mean` and `InvStdDev`. weft
/// computes the normalization itself in f32 (f64 in the reference) whichever it names.
fn stash_type(n: &dyn OnnxNode, x: DType) -> Result<DType, OnnxError> {
    let code = n.int("stash_type", 1)?;
    match n.element_type(code) {
        Some(t) if t.is_float() => Ok(t),
        // BFLOAT16, which weft holds no tensors of: the statistics in `x`'s type.
        Some(_) | None if code == 16 => Ok(x),
        Some(_) | None => Err(n.attr_err(
            "stash_type",
            format!("{}: not a floating-point type", n.element_type_name(code)),
        )),
    }
}

/// LayerNormalization's `Mean` (output 1) and `InvStdDev` (output 2), each of `x`'s
/// shape with the normalized dimensions kept as 1s, in the stash type: the mean
/// `m = ReduceMean(x)`, and `1 / sqrt(ReduceMean((x − m)²) + epsilon)` — the
/// variance about the mean, as the fused node computes it.
fn statistics(
    n: &mut dyn OnnxNode,
    x: TensorId,
    axis: usize,
    epsilon: f64,
    stash: DType,
) -> Result<(), OnnxError> {
    let r = n.shape(x).len();
    let x = if n.tensor(x).dtype == stash {
        x
    } else {
        n.step("stashed", Op::Cast(Cast { to: stash }), vec![x])?
    };
    let mean_of = || {
        Op::Reduce(Reduce {
            kind: ReduceKind::Mean,
            axes: (axis..r).collect(),
            keep_dims: true,
        })
    };
    let mean = n.step("mean", mean_of(), vec![x])?;
    n.emit_output(1, Op::Identity, vec![mean])?;
    if !n.output_used(2) {
        return Ok(());
    }
    let d = n.step("centered", Op::Binary(Binary::Sub), vec![x, mean])?;
    let d2 = n.step("squared", Op::Binary(Binary::Mul), vec![d, d])?;
    let var = n.step("variance", mean_of(), vec![d2])?;
    let eps = n.add_constant("epsilon", vec![1], vec![epsilon as f32], stash);
    let v = n.step("shifted", Op::Binary(Binary::Add), vec![var, eps])?;
    let sd = n.step("std_dev", Op::Unary(Unary::Sqrt), vec![v])?;
    n.emit_output(2, Op::Unary(Unary::Reciprocal), vec![sd])
}

/// MeanVarianceNormalization (`axes` [0, 2, 3] unless given): `(x − m) / (sqrt(v) +
/// 1e-9)` with `m` and `v` the mean and variance over the axes, as ONNX's function
/// body writes it (its epsilon outside the root). Reductions over any axes, so not the
/// layer norm, which normalizes trailing dimensions.
fn import_mvn(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let r = n.shape(x).len();
    let axes = n.ints("axes")?.unwrap_or_else(|| vec![0, 2, 3]);
    let mut axes = axes
        .iter()
        .map(|&a| n.axis("axes", a, r, false))
        .collect::<Result<Vec<_>, _>>()?;
    axes.sort_unstable();
    axes.dedup();
    let mean_of = || {
        Op::Reduce(Reduce {
            kind: ReduceKind::Mean,
            axes: axes.clone(),
            keep_dims: true,
        })
    };
    let m = n.step("mean", mean_of(), vec![x])?;
    let d = n.step("centered", Op::Binary(Binary::Sub), vec![x, m])?;
    let d2 = n.step("squared", Op::Binary(Binary::Mul), vec![d, d])?;
    let v = n.step("variance", mean_of(), vec![d2])?;
    let sd = n.step("std_dev", Op::Unary(Unary::Sqrt), vec![v])?;
    let eps = n.add_constant("epsilon", vec![], vec![1e-9], n.tensor(x).dtype);
    let sd = n.step("shifted", Op::Binary(Binary::Add), vec![sd, eps])?;
    n.emit(Op::Binary(Binary::Div), vec![d, sd])
}

/// `x` normalized over its dimensions from `axis` on, without scale or bias: a layer
/// norm whose scale is a constant 1.
fn normalized(
    n: &mut dyn OnnxNode,
    x: TensorId,
    axis: usize,
    epsilon: f64,
) -> Result<TensorId, OnnxError> {
    let dtype = n.tensor(x).dtype;
    let one = n.add_constant("one", vec![1], vec![1.0], dtype);
    n.step(
        "normalized",
        Op::LayerNorm(LayerNorm {
            axis,
            epsilon,
            rms: false,
        }),
        vec![x, one],
    )
}

/// `y · scale + bias` with `scale` and `bias` of shape `[k]` applied along dimension 1
/// of `y` (reshaped to `[k, 1, ...]`); `what` names the `k` things in errors.
fn affine(
    n: &mut dyn OnnxNode,
    y: TensorId,
    scale: TensorId,
    bias: TensorId,
    what: &str,
) -> Result<(), OnnxError> {
    let ys = n.shape(y);
    let k = ys[1];
    let mut along = vec![1; ys.len() - 1];
    along[0] = k;
    let mut params = [scale, bias];
    for (i, (p, tag)) in params.iter_mut().zip(["scale", "bias"]).enumerate() {
        let ps = n.shape(*p);
        if ps != [k] {
            return Err(n.err(format!(
                "input {} ({tag}) has shape {ps:?}, not [{k}]: one per {what}",
                i + 1
            )));
        }
        if along.len() > 1 {
            *p = n.step(
                &format!("{tag}_along"),
                Op::Reshape(Reshape {
                    shape: along.clone(),
                }),
                vec![*p],
            )?;
        }
    }
    let scaled = n.step("scaled", Op::Binary(Binary::Mul), vec![y, params[0]])?;
    n.emit(Op::Binary(Binary::Add), vec![scaled, params[1]])
}

/// InstanceNormalization: `x` `[N, C, D1, ...]` normalized over `D1, ...` per instance
/// and channel (a layer norm from axis 2), then `scale` and `B` per channel.
fn import_instance(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let xs = n.shape(x);
    if xs.len() < 3 {
        return Err(n.err(format!(
            "input 0 has shape {xs:?}: InstanceNormalization normalizes [N, C, D1, ...] (rank 3 or more)"
        )));
    }
    let epsilon = n.float("epsilon", 1e-5)?;
    let (scale, bias) = (n.data(1)?, n.data(2)?);
    let y = normalized(n, x, 2, epsilon)?;
    affine(n, y, scale, bias, "channel")
}

/// GroupNormalization: `x` `[N, C, D...]` in `num_groups` groups of channels, each
/// group of each instance normalized over its channels and `D...` (`x` reshaped to
/// `[N, G, C/G · D...]`, a layer norm from axis 2), then `scale` and `bias`: one per
/// group at opset 18, one per channel from opset 21. `stash_type` (21) names the
/// precision of the normalization, which weft computes in f32 (f64 in the reference)
/// whichever float type it names.
fn import_group(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    let x = n.data(0)?;
    let xs = n.shape(x);
    if xs.len() < 2 {
        return Err(n.err(format!(
            "input 0 has shape {xs:?}: GroupNormalization normalizes [N, C, ...] (rank 2 or more)"
        )));
    }
    if !n.has("num_groups") {
        return Err(n.attr_err("num_groups", "is required"));
    }
    let groups = n.int("num_groups", 0)?;
    let c = xs[1];
    let g = match usize::try_from(groups) {
        Ok(g) if g > 0 && c % g == 0 => g,
        Ok(_) | Err(_) => {
            return Err(n.attr_err(
                "num_groups",
                format!("{groups} does not divide the {c} channels"),
            ));
        }
    };
    let epsilon = n.float("epsilon", 1e-5)?;
    let stash = n.int("stash_type", 1)?;
    // FLOAT, FLOAT16, DOUBLE, BFLOAT16.
    if ![1, 10, 11, 16].contains(&stash) {
        return Err(n.attr_err(
            "stash_type",
            format!("{}: not a floating-point type", n.element_type_name(stash)),
        ));
    }
    let (mut scale, mut bias) = (n.data(1)?, n.data(2)?);
    if n.opset() < 21 {
        // Opset 18: `scale` and `bias` are `[G]`, each value applied to the C/G channels
        // of its group: repeated to `[C]`.
        for (i, (p, tag)) in [(&mut scale, "scale"), (&mut bias, "bias")]
            .into_iter()
            .enumerate()
        {
            let ps = n.shape(*p);
            if ps != [g] {
                return Err(n.err(format!(
                    "input {} ({tag}) has shape {ps:?}, not [{g}]: one per group at opset {}",
                    i + 1,
                    n.opset()
                )));
            }
            let column = n.step(
                &format!("{tag}_column"),
                Op::Reshape(Reshape { shape: vec![g, 1] }),
                vec![*p],
            )?;
            let repeated = n.step(
                &format!("{tag}_repeated"),
                Op::Expand(Expand {
                    shape: vec![g, c / g],
                }),
                vec![column],
            )?;
            *p = n.step(
                &format!("{tag}_per_channel"),
                Op::Reshape(Reshape { shape: vec![c] }),
                vec![repeated],
            )?;
        }
    }
    let inner: usize = xs[2..].iter().product::<usize>() * (c / g);
    let grouped = n.step(
        "grouped",
        Op::Reshape(Reshape {
            shape: vec![xs[0], g, inner],
        }),
        vec![x],
    )?;
    let y = normalized(n, grouped, 2, epsilon)?;
    let y = n.step("ungrouped", Op::Reshape(Reshape { shape: xs }), vec![y])?;
    affine(n, y, scale, bias, "channel")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_rows() {
        let y = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![0., 2., 1., 3.]).unwrap();
        let scale = ArrayD::from_shape_vec(IxDyn(&[2]), vec![1., 2.]).unwrap();
        let ln = layer_norm(&[&y, &scale], 1, 0.0, false);
        assert_eq!(ln.iter().copied().collect::<Vec<_>>(), [-1., 2., -1., 2.]);
        // RMS: [3, 4] / 5·√2 = [0.6, 0.8]·√2, by the scale [1, 2].
        let y = ArrayD::from_shape_vec(IxDyn(&[1, 2]), vec![3., 4.]).unwrap();
        let rms = layer_norm(&[&y, &scale], 1, 0.0, true);
        let want = [0.6 * 2f64.sqrt(), 1.6 * 2f64.sqrt()];
        for (g, w) in rms.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{g} vs {w}");
        }
    }
}
