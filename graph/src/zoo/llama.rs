//! A Llama-family decoder as Hugging Face's `LlamaForCausalLM` computes it in eval mode,
//! the whole sequence at once (prefill, no cache), layer for layer as an ONNX export of
//! it reads before any folding: token ids in, the embedding by `Gather`; per layer an RMS
//! norm (`Pow` → `ReduceMean` → `+ ε` → `Sqrt` → `Reciprocal` → `·` → `· weight`), the
//! query, key and value projections (`MatMul` by `[in, out]` weights), rotary position
//! embeddings in the `rotate_half` form (`q·cos + cat(−q₂, q₁)·sin`), the keys and
//! values of each KV head repeated for the query heads it serves (`repeat_kv`: a
//! `Reshape`, an `Expand`, a `Reshape`), scores `MatMul` → `· 1/√d` → `+ causal mask` →
//! `Softmax` → `MatMul`, the output projection and the residual; then the RMS norm and
//! the gated MLP `down(silu(gate(x)) · up(x))` (SiLU as `x · Sigmoid(x)`) and the
//! residual; the final norm and `lm_head` (the embedding's transpose where tied).
//!
//! Built from primitive ops so that weft's passes find what they find in an export:
//! the RMS norms, SiLU, the attention (causal, the mask dropped) and the sibling
//! products (q/k/v; gate/up).
//!
//! The weights come from a [`LlamaWeights`] source by their Hugging Face names
//! (`model.layers.0.self_attn.q_proj.weight`) and shapes (linear weights `[out, in]`, as
//! `nn.Linear` holds them; the graph stores them transposed, `[in, out]`): seeded random
//! ones for `zoo:llama` ([`Seeded`]), or a checkpoint's. The input is `input_ids` (i32)
//! `[batch, seq]`, the output `logits` f32 `[batch, seq, vocab]`.

use std::convert::Infallible;

use ndarray::{ArrayD, IxDyn};
use rand::RngCore;
use thiserror::Error;
use weft_ir::dtype::DType;

use crate::builder::GraphBuilder;
use crate::graph::{Graph, GraphError, TensorId};
use crate::op::{
    Binary, Concat, Expand, Gather, Op, Reduce, ReduceKind, Reshape, Slice, Softmax, Transpose,
    Unary,
};

/// A Llama-family model's sizes, as its `config.json` gives them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LlamaConfig {
    pub layers: usize,
    pub hidden: usize,
    /// Query heads.
    pub heads: usize,
    /// Key and value heads: each serves `heads / kv_heads` query heads.
    pub kv_heads: usize,
    /// Each head's width (`hidden / heads` unless the config says otherwise).
    pub head_dim: usize,
    /// The gated MLP's width.
    pub intermediate: usize,
    pub vocab: usize,
    /// The longest sequence the model was trained for.
    pub max_positions: usize,
    /// The rotary embedding's base.
    pub rope_theta: f64,
    pub rms_norm_eps: f64,
    /// `lm_head` is the embedding (transposed).
    pub tie_word_embeddings: bool,
    /// The query, key and value projections have biases (Qwen2; Llama's
    /// `attention_bias`).
    pub qkv_bias: bool,
    /// The output projection has a bias (Llama's `attention_bias`).
    pub o_bias: bool,
}

/// The most elements one tensor may have: weft indexes with i32.
const MAX_ELEMENTS: usize = i32::MAX as usize;
/// The most layers `zoo:llama` builds.
const MAX_LAYERS: usize = 1024;
/// The most parameters `zoo:llama` builds or a checkpoint loads (64 GiB as f32, which
/// weft holds on the host while it builds the graph).
const MAX_PARAMETERS: usize = 1 << 34;

impl LlamaConfig {
    /// TinyLlama-1.1B: 22 layers of 2048, 32 heads over 4 KV heads, MLP 5632, 32000
    /// tokens, 2048 positions, θ 10000, ε 1e-5, an untied `lm_head`.
    pub fn tiny_llama() -> LlamaConfig {
        LlamaConfig {
            layers: 22,
            hidden: 2048,
            heads: 32,
            kv_heads: 4,
            head_dim: 64,
            intermediate: 5632,
            vocab: 32000,
            max_positions: 2048,
            rope_theta: 10000.0,
            rms_norm_eps: 1e-5,
            tie_word_embeddings: false,
            qkv_bias: false,
            o_bias: false,
        }
    }

    /// What is wrong with these sizes for a sequence of `seq` tokens, if anything.
    pub fn check(&self, seq: usize) -> Result<(), String> {
        let sizes = [
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("kv heads", self.kv_heads),
            ("head dim", self.head_dim),
            ("intermediate", self.intermediate),
            ("vocab", self.vocab),
        ];
        if let Some((what, _)) = sizes.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{what} must be at least 1"));
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(format!(
                "{} heads do not split over {} KV heads (heads must be a multiple of KV heads)",
                self.heads, self.kv_heads
            ));
        }
        if !self.head_dim.is_multiple_of(2) {
            return Err(format!(
                "the head dim {} is odd: rotary embeddings rotate pairs",
                self.head_dim
            ));
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 0.0) {
            return Err(format!(
                "rope_theta {} is not a positive number",
                self.rope_theta
            ));
        }
        if !(self.rms_norm_eps.is_finite() && self.rms_norm_eps >= 0.0) {
            return Err(format!(
                "rms_norm_eps {} is not a number ≥ 0",
                self.rms_norm_eps
            ));
        }
        // Nothing is drawn or read before its size is known to fit: each weight within
        // weft's i32 indices, all of them within what a host holds as f32.
        let (h, d) = (self.hidden, self.head_dim);
        let weights = [
            ("the embedding (vocab × hidden)", self.vocab.checked_mul(h)),
            (
                "q_proj (heads × head dim × hidden)",
                self.heads.checked_mul(d).and_then(|x| x.checked_mul(h)),
            ),
            (
                "k_proj (kv heads × head dim × hidden)",
                self.kv_heads.checked_mul(d).and_then(|x| x.checked_mul(h)),
            ),
            (
                "gate_proj (intermediate × hidden)",
                self.intermediate.checked_mul(h),
            ),
            (
                "the rotary tables (positions × head dim)",
                self.max_positions.checked_mul(d),
            ),
        ];
        for (what, n) in weights {
            if n.is_none_or(|n| n > MAX_ELEMENTS) {
                return Err(format!(
                    "{what} would have more than {MAX_ELEMENTS} elements: weft indexes tensors with i32"
                ));
            }
        }
        if self.layers > MAX_LAYERS {
            return Err(format!(
                "{} layers is past the {MAX_LAYERS} weft builds (the largest released Llama has 126)",
                self.layers
            ));
        }
        let per_layer = (self.heads + self.kv_heads) * d * h * 2 + 3 * self.intermediate * h;
        let total = per_layer
            .checked_mul(self.layers)
            .and_then(|x| x.checked_add(2 * self.vocab * h));
        if total.is_none_or(|n| n > MAX_PARAMETERS) {
            return Err(format!(
                "the model would hold more than {MAX_PARAMETERS} parameters ({} GiB as f32)",
                (MAX_PARAMETERS * 4) >> 30
            ));
        }
        if seq == 0 || seq > self.max_positions {
            return Err(format!(
                "it takes sequences of 1 to {} tokens, not {seq}",
                self.max_positions
            ));
        }
        Ok(())
    }
}

/// Where the weights come from, by Hugging Face's names and shapes.
pub trait LlamaWeights {
    /// Why a weight could not be had.
    type Error;
    /// The tensor `name`, of `shape` (linear weights `[out, in]`).
    fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<ArrayD<f32>, Self::Error>;
}

/// Why a Llama graph was not built.
#[derive(Debug, Error)]
pub enum LlamaError<E> {
    /// The weight source refused a weight.
    #[error(transparent)]
    Weights(E),
    /// A weight the source gave has the wrong shape.
    #[error("weight `{name}` has shape {got:?}, the config implies {want:?}")]
    Shape {
        name: String,
        got: Vec<usize>,
        want: Vec<usize>,
    },
    /// The sizes do not make a model.
    #[error("{0}")]
    Config(String),
    /// The graph did not build.
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// Seeded random weights: uniform of standard deviation 0.02 (Hugging Face's
/// initializer range), the norms' weights near 1, the biases small.
#[derive(Clone, Copy, Debug)]
pub struct Seeded(pub u64);

impl LlamaWeights for Seeded {
    type Error = Infallible;
    fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<ArrayD<f32>, Infallible> {
        let mut rng = super::weight_rng(self.0, name);
        let mut draw = |bound: f64| {
            // 53 random bits as a float in [0, 1), then to [-bound, bound).
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            ((2.0 * u - 1.0) * bound) as f32
        };
        let norm = name.ends_with("norm.weight");
        let bias = name.ends_with(".bias");
        Ok(ArrayD::from_shape_simple_fn(IxDyn(shape), || {
            if norm {
                1.0 + draw(0.1)
            } else if bias {
                draw(0.01 * 3f64.sqrt())
            } else {
                draw(0.02 * 3f64.sqrt())
            }
        }))
    }
}

/// The model of `cfg` named `name` on `batch` sequences of `seq` tokens, its weights from
/// `weights`.
pub fn llama<W: LlamaWeights>(
    name: &str,
    cfg: &LlamaConfig,
    batch: usize,
    seq: usize,
    weights: &mut W,
) -> Result<Graph, LlamaError<W::Error>> {
    cfg.check(seq).map_err(LlamaError::Config)?;
    let mut m = Builder {
        b: GraphBuilder::new(name),
        cfg: *cfg,
        batch,
        seq,
        weights,
    };
    let (h, v) = (cfg.hidden, cfg.vocab);
    let ids = m.b.input("input_ids", &[batch, seq], DType::I32);
    let embed = m.get("model.embed_tokens.weight", &[v, h])?;
    let table = m.b.weight("model.embed_tokens.weight", embed.clone());
    let gather = Op::Gather(Gather { axis: 0 });
    let mut x = m.b.node("model.embed_tokens", gather, &[table, ids])?;
    let (cos, sin) = m.rotary();
    // Later positions masked by the most negative f32 (Hugging Face's `finfo.min`); one
    // mask every layer adds.
    let mask: Vec<f32> = (0..seq * seq)
        .map(|i| if i % seq > i / seq { f32::MIN } else { 0.0 })
        .collect();
    let mask = ArrayD::from_shape_vec(IxDyn(&[1, 1, seq, seq]), mask).expect("seq² values");
    let mask = m.b.weight("model.causal_mask", mask);
    for l in 0..cfg.layers {
        let p = format!("model.layers.{l}");
        let a = m.rms_norm(&format!("{p}.input_layernorm"), x)?;
        let a = m.attention(&format!("{p}.self_attn"), a, cos, sin, mask)?;
        x = m.b.add(format!("{p}.self_attn.residual"), x, a)?;
        let f = m.rms_norm(&format!("{p}.post_attention_layernorm"), x)?;
        let f = m.mlp(&format!("{p}.mlp"), f)?;
        x = m.b.add(format!("{p}.mlp.residual"), x, f)?;
    }
    let x = m.rms_norm("model.norm", x)?;
    let head = if cfg.tie_word_embeddings {
        embed.reversed_axes().as_standard_layout().into_owned()
    } else {
        transposed(m.get("lm_head.weight", &[v, h])?)
    };
    let head = m.b.weight("lm_head.weight", head);
    let logits = m.b.node("lm_head", Op::MatMul, &[x, head])?;
    m.b.rename(logits, "logits");
    m.b.output(logits);
    Ok(m.b.finish()?)
}

/// `f` (cos or sin) of the rotary angles of positions `0..positions`, row-major
/// `[positions, head_dim]`, as `LlamaRotaryEmbedding` computes them (the frequencies and
/// angles in f32).
pub(super) fn rotary_table(cfg: &LlamaConfig, positions: usize, f: fn(f64) -> f64) -> Vec<f32> {
    let d = cfg.head_dim;
    let inv: Vec<f32> = (0..d / 2)
        .map(|i| (1.0 / cfg.rope_theta.powf((2 * i) as f64 / d as f64)) as f32)
        .collect();
    (0..positions * d)
        .map(|e| {
            let (pos, j) = (e / d, e % d);
            f(f64::from(pos as f32 * inv[j % (d / 2)])) as f32
        })
        .collect()
}

/// `[out, in]` as `[in, out]`, row-major.
pub(super) fn transposed(w: ArrayD<f32>) -> ArrayD<f32> {
    w.reversed_axes().as_standard_layout().into_owned()
}

/// A model under construction (the decode step's builder, `llama_step`, shares it).
pub(super) struct Builder<'w, W> {
    pub(super) b: GraphBuilder,
    pub(super) cfg: LlamaConfig,
    pub(super) batch: usize,
    /// The tokens of one run.
    pub(super) seq: usize,
    pub(super) weights: &'w mut W,
}

impl<W: LlamaWeights> Builder<'_, W> {
    /// The weight `name` from the source, checked to be of `shape`.
    pub(super) fn get(
        &mut self,
        name: &str,
        shape: &[usize],
    ) -> Result<ArrayD<f32>, LlamaError<W::Error>> {
        let w = self
            .weights
            .tensor(name, shape)
            .map_err(LlamaError::Weights)?;
        if w.shape() != shape {
            return Err(LlamaError::Shape {
                name: name.to_string(),
                got: w.shape().to_vec(),
                want: shape.to_vec(),
            });
        }
        Ok(w)
    }

    pub(super) fn node(
        &mut self,
        name: String,
        op: Op,
        inputs: &[TensorId],
    ) -> Result<TensorId, GraphError> {
        self.b.node(name, op, inputs)
    }

    pub(super) fn scalar(&mut self, name: String, v: f32) -> TensorId {
        self.b.weight(name, ArrayD::from_elem(IxDyn(&[]), v))
    }

    /// `x · W (+ b)` for `nn.Linear` `{name}` of `inp → out`.
    pub(super) fn linear(
        &mut self,
        name: &str,
        x: TensorId,
        inp: usize,
        out: usize,
        bias: bool,
    ) -> Result<TensorId, LlamaError<W::Error>> {
        let w = transposed(self.get(&format!("{name}.weight"), &[out, inp])?);
        let w = self.b.weight(format!("{name}.weight"), w);
        let y = self.node(format!("{name}.matmul"), Op::MatMul, &[x, w])?;
        if !bias {
            return Ok(y);
        }
        let b = self.get(&format!("{name}.bias"), &[out])?;
        let b = self.b.weight(format!("{name}.bias"), b);
        Ok(self.b.add(name, y, b)?)
    }

    /// `LlamaRMSNorm`: `weight · x / √(mean(x²) + ε)` over the hidden dimension.
    pub(super) fn rms_norm(
        &mut self,
        name: &str,
        x: TensorId,
    ) -> Result<TensorId, LlamaError<W::Error>> {
        let h = self.cfg.hidden;
        let two = self.scalar(format!("{name}.two"), 2.0);
        let sq = self.b.binary(format!("{name}.pow"), Binary::Pow, x, two)?;
        let mean = Op::Reduce(Reduce {
            kind: ReduceKind::Mean,
            axes: vec![2],
            keep_dims: true,
        });
        let var = self.node(format!("{name}.mean"), mean, &[sq])?;
        let eps = self.scalar(format!("{name}.eps"), self.cfg.rms_norm_eps as f32);
        let var = self.b.add(format!("{name}.add_eps"), var, eps)?;
        let s = self.b.unary(format!("{name}.sqrt"), Unary::Sqrt, var)?;
        let r = self
            .b
            .unary(format!("{name}.rsqrt"), Unary::Reciprocal, s)?;
        let y = self.b.binary(format!("{name}.normed"), Binary::Mul, x, r)?;
        let w = self.get(&format!("{name}.weight"), &[h])?;
        let w = self.b.weight(format!("{name}.weight"), w);
        Ok(self.b.binary(name, Binary::Mul, y, w)?)
    }

    /// The rotary embedding's cos and sin of positions `0..seq`, `[1, 1, seq, head_dim]`,
    /// as `LlamaRotaryEmbedding` computes them (the frequencies and angles in f32).
    fn rotary(&mut self) -> (TensorId, TensorId) {
        let (s, d) = (self.seq, self.cfg.head_dim);
        let shaped = |v: Vec<f32>| ArrayD::from_shape_vec(IxDyn(&[1, 1, s, d]), v).expect("s·d");
        let cos = shaped(rotary_table(&self.cfg, s, f64::cos));
        let sin = shaped(rotary_table(&self.cfg, s, f64::sin));
        let cos = self.b.weight("model.rotary_emb.cos", cos);
        let sin = self.b.weight("model.rotary_emb.sin", sin);
        (cos, sin)
    }

    /// `x·cos + rotate_half(x)·sin` of `x` `[b, heads, s, d]`.
    pub(super) fn rope(
        &mut self,
        p: &str,
        x: TensorId,
        heads: usize,
        cos: TensorId,
        sin: TensorId,
    ) -> Result<TensorId, GraphError> {
        let (b, s, d) = (self.batch, self.seq, self.cfg.head_dim);
        let half = |start| {
            Op::Slice(Slice {
                starts: vec![0, 0, 0, start],
                steps: vec![1; 4],
                sizes: vec![b, heads, s, d / 2],
            })
        };
        let x1 = self.node(format!("{p}.x1"), half(0), &[x])?;
        let x2 = self.node(format!("{p}.x2"), half(d / 2), &[x])?;
        let neg = self.b.unary(format!("{p}.neg"), Unary::Neg, x2)?;
        let rot = self.node(
            format!("{p}.rotate_half"),
            Op::Concat(Concat { axis: 3 }),
            &[neg, x1],
        )?;
        let xc = self.b.binary(format!("{p}.cos"), Binary::Mul, x, cos)?;
        let rs = self.b.binary(format!("{p}.sin"), Binary::Mul, rot, sin)?;
        self.b.add(format!("{p}.rotated"), xc, rs)
    }

    /// `[b, s, heads·d]` as `[b, heads, s, d]`.
    pub(super) fn split_heads(
        &mut self,
        p: &str,
        t: TensorId,
        heads: usize,
    ) -> Result<TensorId, GraphError> {
        let (b, s, d) = (self.batch, self.seq, self.cfg.head_dim);
        let r = self.node(
            format!("{p}.view"),
            Op::Reshape(Reshape {
                shape: vec![b, s, heads, d],
            }),
            &[t],
        )?;
        self.node(
            format!("{p}.transpose"),
            Op::Transpose(Transpose {
                perm: vec![0, 2, 1, 3],
            }),
            &[r],
        )
    }

    /// `repeat_kv`: `[b, kv, s, d]` as `[b, heads, s, d]`, each KV head repeated for the
    /// `heads / kv` query heads it serves.
    fn repeat_kv(&mut self, p: &str, t: TensorId) -> Result<TensorId, GraphError> {
        let LlamaConfig {
            heads,
            kv_heads: kv,
            head_dim: d,
            ..
        } = self.cfg;
        if heads == kv {
            return Ok(t);
        }
        let (b, s, n) = (self.batch, self.seq, heads / kv);
        let one = Op::Reshape(Reshape {
            shape: vec![b, kv, 1, s, d],
        });
        let t = self.node(format!("{p}.unsqueeze"), one, &[t])?;
        let wide = Op::Expand(Expand {
            shape: vec![b, kv, n, s, d],
        });
        let t = self.node(format!("{p}.expand"), wide, &[t])?;
        let flat = Op::Reshape(Reshape {
            shape: vec![b, heads, s, d],
        });
        self.node(format!("{p}.repeat"), flat, &[t])
    }

    /// `LlamaAttention` (eager) of `x` `[b, s, hidden]`, causal, grouped KV heads.
    fn attention(
        &mut self,
        p: &str,
        x: TensorId,
        cos: TensorId,
        sin: TensorId,
        mask: TensorId,
    ) -> Result<TensorId, LlamaError<W::Error>> {
        let LlamaConfig {
            hidden: h,
            heads,
            kv_heads: kv,
            head_dim: d,
            qkv_bias,
            o_bias,
            ..
        } = self.cfg;
        let (b, s) = (self.batch, self.seq);
        let q = self.linear(&format!("{p}.q_proj"), x, h, heads * d, qkv_bias)?;
        let k = self.linear(&format!("{p}.k_proj"), x, h, kv * d, qkv_bias)?;
        let v = self.linear(&format!("{p}.v_proj"), x, h, kv * d, qkv_bias)?;
        let q = self.split_heads(&format!("{p}.q"), q, heads)?;
        let k = self.split_heads(&format!("{p}.k"), k, kv)?;
        let v = self.split_heads(&format!("{p}.v"), v, kv)?;
        let q = self.rope(&format!("{p}.q_rope"), q, heads, cos, sin)?;
        let k = self.rope(&format!("{p}.k_rope"), k, kv, cos, sin)?;
        let k = self.repeat_kv(&format!("{p}.k"), k)?;
        let v = self.repeat_kv(&format!("{p}.v"), v)?;
        let kt = self.node(
            format!("{p}.k_t"),
            Op::Transpose(Transpose {
                perm: vec![0, 1, 3, 2],
            }),
            &[k],
        )?;
        let scores = self.node(format!("{p}.scores"), Op::MatMul, &[q, kt])?;
        let scale = self.scalar(format!("{p}.scaling"), (1.0 / (d as f64).sqrt()) as f32);
        let scores = self
            .b
            .binary(format!("{p}.scaled"), Binary::Mul, scores, scale)?;
        let scores = self.b.add(format!("{p}.masked"), scores, mask)?;
        let probs = self.node(
            format!("{p}.softmax"),
            Op::Softmax(Softmax { axis: 3 }),
            &[scores],
        )?;
        let ctx = self.node(format!("{p}.context"), Op::MatMul, &[probs, v])?;
        self.output_projection(p, ctx, [b, s, heads, d], h, o_bias)
    }

    /// The attention's context `[b, heads, s, d]` back to `[b, s, heads · d]` (a
    /// transpose and a merge of the heads) and through `o_proj`: the tail both the
    /// whole-sequence forward and the cached steps write.
    pub(super) fn output_projection(
        &mut self,
        p: &str,
        ctx: TensorId,
        [b, s, heads, d]: [usize; 4],
        h: usize,
        o_bias: bool,
    ) -> Result<TensorId, LlamaError<W::Error>> {
        let ctx = self.node(
            format!("{p}.context_transpose"),
            Op::Transpose(Transpose {
                perm: vec![0, 2, 1, 3],
            }),
            &[ctx],
        )?;
        let ctx = self.node(
            format!("{p}.context_merge"),
            Op::Reshape(Reshape {
                shape: vec![b, s, heads * d],
            }),
            &[ctx],
        )?;
        self.linear(&format!("{p}.o_proj"), ctx, heads * d, h, o_bias)
    }

    /// `LlamaMLP`: `down(silu(gate(x)) · up(x))`.
    pub(super) fn mlp(&mut self, p: &str, x: TensorId) -> Result<TensorId, LlamaError<W::Error>> {
        let (h, i) = (self.cfg.hidden, self.cfg.intermediate);
        let gate = self.linear(&format!("{p}.gate_proj"), x, h, i, false)?;
        let sig = self
            .b
            .unary(format!("{p}.act_fn.sigmoid"), Unary::Sigmoid, gate)?;
        let act = self
            .b
            .binary(format!("{p}.act_fn"), Binary::Mul, gate, sig)?;
        let up = self.linear(&format!("{p}.up_proj"), x, h, i, false)?;
        let y = self.b.binary(format!("{p}.gated"), Binary::Mul, act, up)?;
        self.linear(&format!("{p}.down_proj"), y, i, h, false)
    }
}
