//! Batch norms folded into the convolutions before them: `bn(conv(x, w) + b)` is
//! `conv(x, w·k) + (b − mean)·k + beta` with `k = gamma / sqrt(var + eps)` per output
//! channel, so inference pays nothing for them (seed 002's evaluation folds them the
//! same way before partitioning).
//!
//! A batch norm folds when it reads a convolution's output that nothing else reads, and
//! the convolution's weights and bias and the norm's four vectors are constants.

use std::sync::Arc;

use ndarray::{ArrayD, Axis, IxDyn};

use super::PassContext;
use crate::graph::{Graph, Tensor, TensorId};
use crate::op::{BatchNorm, Op};

/// Folds batch norms into convolutions; returns how many.
pub fn fold_batch_norms(g: &mut Graph, _: &PassContext) -> usize {
    let mut folded = 0;
    let mut i = 0;
    while i < g.nodes.len() {
        if let Some(done) = try_fold(g, i) {
            folded += done;
            continue;
        }
        i += 1;
    }
    folded
}

/// Folds node `bn` (if it is a foldable batch norm) and returns `Some(1)`.
fn try_fold(g: &mut Graph, bn: usize) -> Option<usize> {
    let node = &g.nodes[bn];
    let Op::BatchNorm(BatchNorm { epsilon }) = node.op else {
        return None;
    };
    let x = node.inputs[0];
    let conv = g.nodes.iter().position(|n| n.output == x)?;
    if !matches!(g.nodes[conv].op, Op::Conv(_)) || g.outputs.contains(&x) {
        return None;
    }
    let readers = g.nodes.iter().filter(|n| n.inputs.contains(&x)).count();
    if readers != 1 {
        return None;
    }
    let constant = |t: TensorId| g.tensor(t).data.clone();
    let params: Vec<Arc<ArrayD<f32>>> = node.inputs[1..5]
        .iter()
        .map(|&t| constant(t))
        .collect::<Option<_>>()?;
    let w = constant(g.nodes[conv].inputs[1])?;
    let bias = match g.nodes[conv].inputs.get(2) {
        Some(&b) => Some(constant(b)?),
        None => None,
    };
    let k_out = w.shape()[0];
    let mut new_w = w.mapv(f64::from);
    let mut new_b = vec![0.0f64; k_out];
    for ch in 0..k_out {
        let (gamma, beta, mean, var) = (
            f64::from(params[0][[ch]]),
            f64::from(params[1][[ch]]),
            f64::from(params[2][[ch]]),
            f64::from(params[3][[ch]]),
        );
        let k = gamma / (var + epsilon).sqrt();
        new_w.index_axis_mut(Axis(0), ch).mapv_inplace(|v| v * k);
        let b0 = bias.as_ref().map_or(0.0, |b| f64::from(b[[ch]]));
        new_b[ch] = (b0 - mean) * k + beta;
    }
    let conv_name = g.nodes[conv].name.clone();
    let w_id = add_constant(
        g,
        format!("{conv_name}.weight_folded"),
        new_w.mapv(|v| v as f32),
    );
    let b_arr = ArrayD::from_shape_vec(IxDyn(&[k_out]), new_b.iter().map(|&v| v as f32).collect())
        .expect("k_out elements");
    let b_id = add_constant(g, format!("{conv_name}.bias_folded"), b_arr);
    let out = g.nodes[bn].output;
    let c = &mut g.nodes[conv];
    c.inputs.truncate(1);
    c.inputs.extend([w_id, b_id]);
    c.output = out;
    g.nodes.remove(bn);
    Some(1)
}

/// A new constant with a name no tensor has.
fn add_constant(g: &mut Graph, name: String, data: ArrayD<f32>) -> TensorId {
    let mut unique = name.clone();
    let mut n = 1;
    while g.tensors.iter().any(|t| t.name == unique) {
        unique = format!("{name}_{n}");
        n += 1;
    }
    g.add_tensor(Tensor {
        name: unique,
        shape: data.shape().to_vec(),
        dtype: weft_ir::dtype::DType::F32,
        layout: Default::default(),
        data: Some(Arc::new(data)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::GraphBuilder;
    use crate::op::Conv;
    use crate::passes::testing::rewrite;
    use weft_ir::dtype::DType;

    fn vector(b: &mut GraphBuilder, name: &str, values: &[f32]) -> TensorId {
        b.weight(
            name,
            ArrayD::from_shape_vec(IxDyn(&[values.len()]), values.to_vec()).unwrap(),
        )
    }

    #[test]
    fn conv_bn_relu_folds_to_conv_relu() {
        for with_bias in [false, true] {
            let mut b = GraphBuilder::new("t");
            let x = b.input("x", &[1, 2, 5, 4], DType::F32);
            let w = b.weight(
                "w",
                ArrayD::from_shape_fn(IxDyn(&[3, 2, 3, 3]), |d| {
                    (d[0] * 7 + d[1] * 3 + d[2] + d[3]) as f32 * 0.1 - 0.8
                }),
            );
            let bias = with_bias.then(|| vector(&mut b, "b", &[0.5, -0.25, 1.0]));
            let y = b.conv("conv", x, w, bias, Conv::new(2, 1)).unwrap();
            let gamma = vector(&mut b, "gamma", &[1.5, 0.5, -1.0]);
            let beta = vector(&mut b, "beta", &[0.1, 0.2, 0.3]);
            let mean = vector(&mut b, "mean", &[0.3, -0.1, 0.0]);
            let var = vector(&mut b, "var", &[0.9, 2.0, 0.25]);
            let y = b.batch_norm("bn", y, gamma, beta, mean, var, 1e-5).unwrap();
            let y = b.relu("relu", y).unwrap();
            b.output(y);
            let g = b.finish().unwrap();
            // f32 weights: the fold rounds them once.
            // The bias, where there was one, is folded in.
            rewrite(&g, fold_batch_norms).check(
                1,
                "
                graph t (2 nodes, 57 parameters)
                  input  %x: f32[1,2,5,4]
                  %bn = Conv(strides=[2, 2], pads=[1, 1, 1, 1])(%x, %conv.weight_folded, %conv.bias_folded): f32[1,3,3,2]    # conv
                  %relu = Relu(%bn): f32[1,3,3,2]    # relu
                  output %relu
                ",
                1e-5,
            );
        }
    }

    #[test]
    fn a_conv_read_twice_keeps_its_batch_norm() {
        let mut b = GraphBuilder::new("t");
        let x = b.input("x", &[1, 1, 3, 3], DType::F32);
        let w = b.weight("w", ArrayD::from_elem(IxDyn(&[1, 1, 1, 1]), 2.0));
        let y = b.conv("conv", x, w, None, Conv::new(1, 0)).unwrap();
        let p: Vec<TensorId> = ["g", "be", "m", "v"]
            .iter()
            .map(|n| vector(&mut b, n, &[1.0]))
            .collect();
        let z = b.batch_norm("bn", y, p[0], p[1], p[2], p[3], 1e-5).unwrap();
        let s = b.add("sum", z, y).unwrap();
        b.output(s);
        let g = b.finish().unwrap();
        assert_eq!(rewrite(&g, fold_batch_norms).changed, 0);
    }
}
