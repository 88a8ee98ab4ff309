//! `attention-f16`: `O = softmax(Q·Kᵀ / √d) · V` per head, optionally causal, with f16
//! inputs and output and f32 arithmetic (PyTorch's `scaled_dot_product_attention` on
//! half tensors, the transformers' self-attention after the projections).

use ndarray::{ArrayD, Axis, IxDyn};
use weft_ir::prelude::*;
use weft_ir::te::TeError;

use crate::{Definition, OpSpec, Shape};

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "attention-f16",
    summary: "fused attention softmax(Q·Kᵀ/√d)·V per head, fp16 in and out, fp32 inside (causal=1: key j seen by query i where j ≤ i)",
    dims: &[("bh", 12), ("s", 128), ("t", 128), ("d", 64), ("causal", 0)],
    schedules: &["template"],
    best: "template",
    // BERT-base's heads at sequence lengths 128, 512 and 2048.
    bench: &[
        &[12, 128, 128, 64, 0],
        &[12, 128, 128, 64, 1],
        &[12, 512, 512, 64, 0],
        &[12, 512, 512, 64, 1],
        &[12, 2048, 2048, 64, 0],
        &[12, 2048, 2048, 64, 1],
    ],
    small: &[&[3, 7, 9, 32, 1], &[2, 33, 17, 80, 0]],
    seed: "002",
    zero_ok: &["causal"],
    check,
    template: Some(&crate::templates::ATTENTION),
    define,
    // Its one schedule is the template.
    apply: crate::no_primitives,
    reference,
    // On matrix units the probabilities enter the second product rounded to f16 (as
    // FlashAttention's do): each term carries up to 2⁻¹¹ of itself, which a direct f32
    // sum of n ≥ 32 terms reaches with growth 2⁻¹¹ / (32 · 2⁻²⁴) = 256.
    rounding_growth: 256.0,
    row_reference: None,
};

fn check(shape: &Shape) -> Result<(), String> {
    let causal = shape.get("causal");
    if causal != 0 && causal != 1 {
        return Err(format!("causal = {causal} must be 0 or 1"));
    }
    Ok(())
}

/// The masked score value: the most negative finite f32.
const MASKED: f32 = f32::MIN;

fn define(shape: &Shape) -> Result<Definition, TeError> {
    let (bh, s, t, d) = (
        shape.get("bh"),
        shape.get("s"),
        shape.get("t"),
        shape.get("d"),
    );
    let causal = shape.get("causal") != 0;
    let scale = (1.0 / (d as f64).sqrt()) as f32;
    let q = te::placeholder("Q", &[bh, s, d], DType::F16);
    let k = te::placeholder("K", &[bh, t, d], DType::F16);
    let v = te::placeholder("V", &[bh, t, d], DType::F16);
    let e = te::reduce_axis("e", d);
    let dots = te::compute("dots", &[("z", bh), ("i", s), ("j", t)], |ix| {
        let prod = q
            .at(&[ix[0].clone(), ix[1].clone(), e.expr()])
            .cast(DType::F32)
            * k.at(&[ix[0].clone(), ix[2].clone(), e.expr()])
                .cast(DType::F32);
        te::sum(prod, &[&e])
    });
    let scores = te::compute("scores", &[("z", bh), ("i", s), ("j", t)], |ix| {
        let dot = dots.at(ix);
        if causal {
            te::select(ix[2].clone().le(ix[1].clone()), dot * scale, MASKED)
        } else {
            dot * scale
        }
    });
    let j = te::reduce_axis("j", t);
    let row_max = te::compute("row_max", &[("z", bh), ("i", s)], |ix| {
        te::max(scores.at(&[ix[0].clone(), ix[1].clone(), j.expr()]), &[&j])
    });
    let probs = te::compute("probs", &[("z", bh), ("i", s), ("j", t)], |ix| {
        te::exp(scores.at(ix) - row_max.at(&[ix[0].clone(), ix[1].clone()]))
    });
    let j2 = te::reduce_axis("j", t);
    let row_sum = te::compute("row_sum", &[("z", bh), ("i", s)], |ix| {
        te::sum(probs.at(&[ix[0].clone(), ix[1].clone(), j2.expr()]), &[&j2])
    });
    let j3 = te::reduce_axis("j", t);
    let out = te::compute("O_acc", &[("z", bh), ("i", s), ("c", d)], |ix| {
        te::sum(
            probs.at(&[ix[0].clone(), ix[1].clone(), j3.expr()])
                * v.at(&[ix[0].clone(), j3.expr(), ix[2].clone()])
                    .cast(DType::F32),
            &[&j3],
        )
    });
    let o = te::compute("O", &[("z", bh), ("i", s), ("c", d)], |ix| {
        (out.at(ix) / row_sum.at(&[ix[0].clone(), ix[1].clone()])).cast(DType::F16)
    });
    Ok(Definition {
        func: te::create_func("attention_f16", [&q, &k, &v, &o])?,
        inputs: vec![q, k, v],
        output: o,
        flops: (4 * bh * s * t * d) as f64,
        bytes: 2.0 * (2 * bh * s * d + 2 * bh * t * d) as f64,
    })
}

/// Float64 attention of `[Q, K, V]` (`[bh, s, d]`, `[bh, t, d]`, `[bh, t, d]`), causal as
/// the shape says.
fn reference(inputs: &[ArrayD<f64>], shape: &Shape) -> ArrayD<f64> {
    let [q, k, v] = inputs else {
        return ArrayD::zeros(IxDyn(&[0]));
    };
    let causal = shape.get("causal") != 0;
    let (bh, s, d) = (q.shape()[0], q.shape()[1], q.shape()[2]);
    let t = k.shape()[1];
    let scale = 1.0 / (d as f64).sqrt();
    let mut out = ArrayD::zeros(IxDyn(&[bh, s, d]));
    for z in 0..bh {
        let (qz, kz, vz) = (
            q.index_axis(Axis(0), z),
            k.index_axis(Axis(0), z),
            v.index_axis(Axis(0), z),
        );
        for i in 0..s {
            let scores: Vec<f64> = (0..t)
                .map(|j| {
                    if causal && j > i {
                        MASKED as f64
                    } else {
                        (0..d).map(|e| qz[[i, e]] * kz[[j, e]]).sum::<f64>() * scale
                    }
                })
                .collect();
            let max = scores.iter().copied().fold(f64::MIN, f64::max);
            let p: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
            let sum: f64 = p.iter().sum();
            for c in 0..d {
                let acc: f64 = (0..t).map(|j| p[j] * vz[[j, c]]).sum();
                out[[z, i, c]] = acc / sum;
            }
        }
    }
    out
}
