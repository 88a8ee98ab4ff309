//! ONNX's Attention (opset 23) as the sub-graph weft's attention pass makes one fused
//! node of:
//!
//! ```text
//! s = MatMul(q, kᵀ) · scale  [→ softcap · tanh(s / softcap)]  [+ bias]
//! p = Softmax(s)  [→ Where(IsNaN(p), 0, p) where a mask is given]
//! y = MatMul(p, v)
//! ```
//!
//! The converter writes the primitive ops rather than the fused `Attention` node:
//! `passes::recognize_attention` fuses the chain where the target holds the kernel
//! (and keeps it as products and a softmax where it does not, instead of refusing the
//! model), and where the chain is not the fused op's (a softcap, a used
//! `qk_matmul_output`) the primitives are the computation. 3-D inputs
//! (`[batch, seq, heads · size]`) are reshaped and transposed to `[batch, heads, seq,
//! size]` and back; grouped KV heads are repeated to the query heads (head `h` of the
//! query reads KV head `h / (q_heads / kv_heads)`); `past_key`/`past_value` are
//! concatenated before `k`/`v` along the sequence (`present_key`/`present_value`).
//!
//! The bias is built here, at import: a boolean `attn_mask` as 0 / -inf (a Where), a
//! float one as it is, either padded with -inf to the keys' total length; `is_causal`
//! as a constant `[s, T]` mask, 0 where key `j ≤ i + past` and -inf elsewhere (ONNX
//! aligns the causal diagonal to the end of the cache: the newest query sees every
//! cached key). With no past that is the top-left triangle the attention pass turns
//! into the fused kernel's `causal` flag; with a past it stays an explicit mask, since
//! the kernel's flag is `j ≤ i`.
//!
//! ONNX's releases disagree on two things, and weft refuses them rather than pick one:
//! a `softcap` with a mask or `is_causal` (onnx 1.19's function body and node tests
//! cap the scores after the bias is added, so masked scores become `-softcap`; the
//! current specification and ONNX Runtime cap before, keeping them -inf), and
//! `qk_matmul_output_mode` 1 where a bias or softcap is present (the scores with the
//! bias in onnx 1.19; after the softcap, before the bias, now). Where they agree (no
//! bias; a mode that reads the same in both) weft computes it.
//!
//! A row that a mask hides entirely gives zeros (the specification's rule since its
//! errata; onnx 1.19's tests had none): PyTorch's guard, `Where(IsNaN(p), 0, p)`,
//! which the fused kernel computes too. `softmax_precision` is read and checked; weft
//! computes softmax in f32 whatever the storage (docs/f16.md).

use weft_ir::dtype::DType;

use super::super::onnx::{OnnxError, OnnxNode};
use super::super::{Binary, Concat, Expand, Op, Reshape, Softmax, Transpose, Unary};
use crate::tensor::TensorId;

/// ONNX element types `softmax_precision` may name: FLOAT, FLOAT16, DOUBLE, BFLOAT16.
const SOFTMAX_PRECISIONS: &[i64] = &[1, 10, 11, 16];

/// Attention-23.
pub(in crate::op) fn import(n: &mut dyn OnnxNode) -> Result<(), OnnxError> {
    if n.input_count() > 6 && n.has_input(6) {
        return Err(
            n.err("input 6 (nonpad_kv_seqlen) is Attention-24's; weft imports Attention-23")
        );
    }
    let causal = n.flag("is_causal", false)?;
    let softcap = n.float("softcap", 0.0)?;
    let mode = n.int("qk_matmul_output_mode", 0)?;
    if !(0..=3).contains(&mode) {
        return Err(n.attr_err("qk_matmul_output_mode", format!("is {mode}, not 0 to 3")));
    }
    if n.has("softmax_precision") {
        let p = n.int("softmax_precision", 1)?;
        if !SOFTMAX_PRECISIONS.contains(&p) {
            return Err(n.attr_err(
                "softmax_precision",
                format!("is {}, not a floating-point type", n.element_type_name(p)),
            ));
        }
    }
    if !softcap.is_finite() || softcap < 0.0 {
        return Err(n.attr_err("softcap", format!("is {softcap}, not a finite value ≥ 0")));
    }
    let masked = n.has_input(3);
    if softcap > 0.0 && (masked || causal) {
        return Err(n.attr_err(
            "softcap",
            "with attn_mask or is_causal: ONNX releases differ on whether the softcap comes \
             before the mask (the current specification, ONNX Runtime) or after it (onnx \
             1.19's tests), and weft does not guess",
        ));
    }
    let wants_qk = n.output_used(3);
    if wants_qk && mode == 1 && (masked || causal || softcap > 0.0) {
        return Err(n.attr_err(
            "qk_matmul_output_mode",
            "1 with a mask, is_causal or softcap: ONNX releases differ on what it outputs \
             (the scores after the softcap, or after the mask), and weft does not guess",
        ));
    }

    let (q, k, v) = (n.data(0)?, n.data(1)?, n.data(2)?);
    let dtype = n.tensor(q).dtype;
    let heads = Heads::of(n, q, k, v)?;
    let Heads {
        batch,
        q_heads,
        kv_heads,
        s,
        t,
        d,
        dv,
        three_d,
    } = heads;
    let (q, mut k, mut v) = if three_d {
        (
            to_heads(n, "q", q, [batch, s, q_heads, d])?,
            to_heads(n, "k", k, [batch, t, kv_heads, d])?,
            to_heads(n, "v", v, [batch, t, kv_heads, dv])?,
        )
    } else {
        (q, k, v)
    };

    // The cache: past before the new keys and values.
    let past = match (n.has_input(4), n.has_input(5)) {
        (false, false) => 0,
        (true, true) => {
            let (pk, pv) = (n.data(4)?, n.data(5)?);
            let past = n.shape(pk).get(2).copied().unwrap_or(0);
            let cat = Op::Concat(Concat { axis: 2 });
            k = n.step("present_key", cat.clone(), vec![pk, k])?;
            v = n.step("present_value", cat, vec![pv, v])?;
            past
        }
        (true, false) | (false, true) => {
            return Err(n.err("past_key and past_value must be given together"));
        }
    };
    n.emit_output(1, Op::Identity, vec![k])?;
    n.emit_output(2, Op::Identity, vec![v])?;
    let total = past + t;

    let bias = bias(n, dtype, s, total, past, causal)?;

    // Grouped KV heads: each repeated to the query heads that read it.
    if q_heads != kv_heads {
        if kv_heads == 0 || !q_heads.is_multiple_of(kv_heads) {
            return Err(n.err(format!(
                "{q_heads} query heads are not a multiple of {kv_heads} key/value heads"
            )));
        }
        let rep = q_heads / kv_heads;
        k = repeat_heads(n, "k", k, [batch, kv_heads, rep, total, d])?;
        v = repeat_heads(n, "v", v, [batch, kv_heads, rep, total, dv])?;
    }

    let scale = if n.has("scale") {
        n.float("scale", 1.0)?
    } else {
        1.0 / (d as f64).sqrt()
    };
    let kt = n.step(
        "keys_t",
        Op::Transpose(Transpose {
            perm: vec![0, 1, 3, 2],
        }),
        vec![k],
    )?;
    let qk = n.step("qk", Op::MatMul, vec![q, kt])?;
    let c = n.add_constant("scale", vec![], vec![scale as f32], dtype);
    let scores = n.step("scaled", Op::Binary(Binary::Mul), vec![qk, c])?;
    let mut capped = scores;
    if softcap > 0.0 {
        let cap = n.add_constant("softcap", vec![], vec![softcap as f32], dtype);
        let x = n.step("over_cap", Op::Binary(Binary::Div), vec![scores, cap])?;
        let x = n.step("tanh", Op::Unary(Unary::Tanh), vec![x])?;
        capped = n.step("capped", Op::Binary(Binary::Mul), vec![x, cap])?;
    }
    let biased = match bias {
        Some(b) => n.step("biased", Op::Binary(Binary::Add), vec![capped, b])?,
        None => capped,
    };
    let mut p = n.step("softmax", Op::Softmax(Softmax { axis: 3 }), vec![biased])?;
    if masked {
        // A row the mask hides entirely is NaN: zeros, as the specification says.
        let nan = n.step("nan", Op::IsNaN, vec![p])?;
        let zero = n.add_constant("zero", vec![], vec![0.0], dtype);
        p = n.step("guarded", Op::Where, vec![nan, zero, p])?;
    }
    if wants_qk {
        // Mode 1 here has no bias and no softcap (refused above): the scores.
        let out = if mode == 3 {
            p
        } else if mode == 2 {
            biased
        } else {
            scores
        };
        n.emit_output(3, Op::Identity, vec![out])?;
    }
    if !three_d {
        return n.emit(Op::MatMul, vec![p, v]);
    }
    let y = n.step("pv", Op::MatMul, vec![p, v])?;
    let y = n.step(
        "y_seq",
        Op::Transpose(Transpose {
            perm: vec![0, 2, 1, 3],
        }),
        vec![y],
    )?;
    n.emit(
        Op::Reshape(Reshape {
            shape: vec![batch, s, q_heads * dv],
        }),
        vec![y],
    )
}

/// The sizes of one Attention node, read from its inputs and attributes.
struct Heads {
    batch: usize,
    q_heads: usize,
    kv_heads: usize,
    /// Query and key/value sequence lengths (the keys' without the past).
    s: usize,
    t: usize,
    /// The query/key and value head sizes.
    d: usize,
    dv: usize,
    /// Inputs `[batch, seq, heads · size]`.
    three_d: bool,
}

impl Heads {
    fn of(n: &dyn OnnxNode, q: TensorId, k: TensorId, v: TensorId) -> Result<Heads, OnnxError> {
        let (qs, ks, vs) = (n.shape(q), n.shape(k), n.shape(v));
        let heads_attr = |attr: &str| -> Result<Option<usize>, OnnxError> {
            if !n.has(attr) {
                return Ok(None);
            }
            match n.int(attr, 0)? {
                h if h > 0 => Ok(Some(h as usize)),
                h => Err(n.attr_err(attr, format!("is {h}, not a positive count"))),
            }
        };
        let (qh, kvh) = (heads_attr("q_num_heads")?, heads_attr("kv_num_heads")?);
        let same_rank = ks.len() == qs.len() && vs.len() == qs.len();
        let rank = if same_rank { qs.len() } else { 0 };
        match rank {
            3 => {
                let (Some(qh), Some(kvh)) = (qh, kvh) else {
                    return Err(
                        n.err("3-D inputs need the q_num_heads and kv_num_heads attributes")
                    );
                };
                let split = |what: &str, hidden: usize, h: usize| {
                    if hidden.is_multiple_of(h) {
                        Ok(hidden / h)
                    } else {
                        Err(n.err(format!(
                            "{what}'s hidden size {hidden} is not a multiple of {h} heads"
                        )))
                    }
                };
                let d = split("Q", qs[2], qh)?;
                let dk = split("K", ks[2], kvh)?;
                let dv = split("V", vs[2], kvh)?;
                if dk != d || ks[0] != qs[0] || vs[0] != qs[0] || vs[1] != ks[1] {
                    return Err(n.err(format!(
                        "Q {qs:?}, K {ks:?} and V {vs:?} with {qh} and {kvh} heads do not \
                         agree on the batch, the head size or the key/value length"
                    )));
                }
                Ok(Heads {
                    batch: qs[0],
                    q_heads: qh,
                    kv_heads: kvh,
                    s: qs[1],
                    t: ks[1],
                    d,
                    dv,
                    three_d: true,
                })
            }
            4 => {
                let agree = ks[0] == qs[0]
                    && vs[0] == qs[0]
                    && vs[1] == ks[1]
                    && ks[3] == qs[3]
                    && vs[2] == ks[2]
                    && qh.is_none_or(|h| h == qs[1])
                    && kvh.is_none_or(|h| h == ks[1]);
                if !agree {
                    return Err(n.err(format!(
                        "Q {qs:?}, K {ks:?} and V {vs:?} do not agree on the batch, the \
                         heads, the head size or the key/value length"
                    )));
                }
                Ok(Heads {
                    batch: qs[0],
                    q_heads: qs[1],
                    kv_heads: ks[1],
                    s: qs[2],
                    t: ks[2],
                    d: qs[3],
                    dv: vs[3],
                    three_d: false,
                })
            }
            // Rank 0 here: the three ranks differ.
            r => Err(n.err(format!(
                "Q {qs:?}, K {ks:?} and V {vs:?} ({}): Attention takes three 3-D or three 4-D \
                 inputs",
                if r == 0 {
                    "ranks that differ".to_string()
                } else {
                    format!("rank {r}")
                }
            ))),
        }
    }
}

/// `[batch, seq, heads · size]` as `[batch, heads, seq, size]` (`split` is `[batch,
/// seq, heads, size]`).
fn to_heads(
    n: &mut dyn OnnxNode,
    tag: &str,
    x: TensorId,
    split: [usize; 4],
) -> Result<TensorId, OnnxError> {
    let x = n.step(
        &format!("{tag}_split"),
        Op::Reshape(Reshape {
            shape: split.to_vec(),
        }),
        vec![x],
    )?;
    n.step(
        &format!("{tag}_heads"),
        Op::Transpose(Transpose {
            perm: vec![0, 2, 1, 3],
        }),
        vec![x],
    )
}

/// `[batch, kv_heads, len, size]` with each head repeated `rep` times in place
/// (`[h0, h0, h1, h1, ...]`); `wide` is `[batch, kv_heads, rep, len, size]`.
fn repeat_heads(
    n: &mut dyn OnnxNode,
    tag: &str,
    x: TensorId,
    wide: [usize; 5],
) -> Result<TensorId, OnnxError> {
    let [b, h, rep, len, size] = wide;
    let x = n.step(
        &format!("{tag}_one"),
        Op::Reshape(Reshape {
            shape: vec![b, h, 1, len, size],
        }),
        vec![x],
    )?;
    let x = n.step(
        &format!("{tag}_rep"),
        Op::Expand(Expand {
            shape: wide.to_vec(),
        }),
        vec![x],
    )?;
    n.step(
        &format!("{tag}_grouped"),
        Op::Reshape(Reshape {
            shape: vec![b, h * rep, len, size],
        }),
        vec![x],
    )
}

/// The additive bias of the scores `[.., s, total]`: the mask (0 / -inf from a boolean
/// one, padded with -inf to `total` keys) plus the causal mask; `None` where neither.
fn bias(
    n: &mut dyn OnnxNode,
    dtype: DType,
    s: usize,
    total: usize,
    past: usize,
    causal: bool,
) -> Result<Option<TensorId>, OnnxError> {
    let mut bias = None;
    if n.has_input(3) {
        let m = n.data(3)?;
        let mut ms = n.shape(m);
        let Some(&len) = ms.last() else {
            return Err(n.err("attn_mask is a scalar: it needs a last dimension of keys"));
        };
        if ms.len() > 4 || len > total || len == 0 {
            return Err(n.err(format!(
                "attn_mask {ms:?} does not broadcast to the scores [batch, heads, {s}, {total}]"
            )));
        }
        let mut b = m;
        match n.tensor(m).dtype {
            DType::Bool => {
                let zero = n.add_constant("mask_on", vec![], vec![0.0], dtype);
                let off = n.add_constant("mask_off", vec![], vec![f32::NEG_INFINITY], dtype);
                b = n.step("mask_bias", Op::Where, vec![m, zero, off])?;
            }
            x if x == dtype => {}
            x => {
                return Err(n.err(format!(
                    "attn_mask is {x:?}: a mask is bool or the type of Q ({dtype:?})"
                )));
            }
        }
        if len < total {
            // Keys past the mask's end are masked (ONNX pads a short mask with -inf).
            let last = ms.len() - 1;
            ms[last] = total - len;
            let count = ms.iter().product();
            let pad = n.add_constant("mask_pad", ms, vec![f32::NEG_INFINITY; count], dtype);
            b = n.step(
                "mask_padded",
                Op::Concat(Concat { axis: last }),
                vec![b, pad],
            )?;
        }
        bias = Some(b);
    }
    if causal {
        let values = (0..s * total)
            .map(|e| {
                let (i, j) = (e / total, e % total);
                if j <= i + past {
                    0.0
                } else {
                    f32::NEG_INFINITY
                }
            })
            .collect();
        let tri = n.add_constant("causal", vec![s, total], values, dtype);
        bias = Some(match bias {
            Some(b) => n.step("mask_causal", Op::Binary(Binary::Add), vec![b, tri])?,
            None => tri,
        });
    }
    Ok(bias)
}
