//! BERT and GPT-2 as the Hugging Face models compute them in eval mode (`BertModel`,
//! `GPT2Model`), with seeded random weights, layer for layer as an ONNX export of them
//! reads: token ids in, embeddings by `Gather`, every linear layer a `MatMul` by an
//! `[in, out]` weight plus its bias, heads split by `Reshape` and `Transpose`, scores
//! `MatMul` → `Mul` by `1/√d` (→ `Add` of the causal mask for GPT-2) → `Softmax` →
//! `MatMul`, `LayerNormalization`, GELU (exact for BERT, the tanh form for GPT-2).
//!
//! Names follow the Hugging Face modules (`encoder.layer.0.attention.self.query.weight`,
//! `h.0.attn.c_attn.weight`). The input is `input_ids` (i32 in weft, int64 in an ONNX
//! export) `[batch, seq]`; the outputs are BERT's `last_hidden_state` and `pooler_output`,
//! GPT-2's `last_hidden_state`. BERT takes no attention mask (every token attends) and
//! token type 0 everywhere. Weights are drawn as Hugging Face initializes them (normal,
//! standard deviation 0.02 — uniform of that deviation here), layer norms near identity.

use ndarray::{ArrayD, IxDyn};
use rand::RngCore;
use weft_ir::dtype::DType;

use crate::builder::GraphBuilder;
use crate::graph::{Graph, GraphError, TensorId};
use crate::op::{Binary, Gather, Gemm, LayerNorm, Op, Reshape, Slice, Softmax, Transpose, Unary};

/// Which architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Post-norm encoder, exact GELU, a pooler on the first token.
    Bert,
    /// Pre-norm decoder, causal attention, tanh GELU, a final layer norm.
    Gpt2,
}

/// A transformer's sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransformerConfig {
    pub family: Family,
    pub vocab: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    /// The feed-forward width.
    pub intermediate: usize,
    /// The longest sequence (the position embedding's rows).
    pub max_positions: usize,
    pub epsilon: f64,
}

impl TransformerConfig {
    /// `bert-base-uncased`: 12 layers of 768, 12 heads, 30522 tokens, 512 positions.
    pub fn bert_base() -> TransformerConfig {
        TransformerConfig {
            family: Family::Bert,
            vocab: 30522,
            hidden: 768,
            layers: 12,
            heads: 12,
            intermediate: 3072,
            max_positions: 512,
            epsilon: 1e-12,
        }
    }

    /// `gpt2` (124M): 12 layers of 768, 12 heads, 50257 tokens, 1024 positions.
    pub fn gpt2() -> TransformerConfig {
        TransformerConfig {
            family: Family::Gpt2,
            vocab: 50257,
            hidden: 768,
            layers: 12,
            heads: 12,
            intermediate: 3072,
            max_positions: 1024,
            epsilon: 1e-5,
        }
    }

    /// A small model of the same family (tests): 2 layers of 64, 4 heads, 97 tokens.
    pub fn tiny(family: Family) -> TransformerConfig {
        TransformerConfig {
            vocab: 97,
            hidden: 64,
            layers: 2,
            heads: 4,
            intermediate: 96,
            max_positions: 64,
            ..match family {
                Family::Bert => TransformerConfig::bert_base(),
                Family::Gpt2 => TransformerConfig::gpt2(),
            }
        }
    }
}

/// The model of `cfg` on `batch` sequences of `seq` tokens, weights from `seed`.
pub fn transformer(
    name: &str,
    cfg: &TransformerConfig,
    batch: usize,
    seq: usize,
    seed: u64,
) -> Result<Graph, GraphError> {
    let mut m = Model {
        b: GraphBuilder::new(name),
        seed,
        cfg: *cfg,
        batch,
        seq,
    };
    let ids = m.b.input("input_ids", &[batch, seq], DType::I32);
    let (h, v) = (cfg.hidden, cfg.vocab);
    match cfg.family {
        Family::Bert => {
            let words = m.normal("embeddings.word_embeddings.weight", &[v, h]);
            let x = m.b.node(
                "embeddings.word_embeddings",
                Op::Gather(Gather { axis: 0 }),
                &[words, ids],
            )?;
            // Positions 0..seq and token type 0 are constants: their rows, added.
            let pos = m.normal_rows(
                "embeddings.position_embeddings.weight",
                cfg.max_positions,
                seq,
            );
            let typ = m.normal_rows("embeddings.token_type_embeddings.weight", 2, 1);
            let x = m.b.add("embeddings.add_position", x, pos)?;
            let x = m.b.add("embeddings.add_token_type", x, typ)?;
            let mut x = m.layer_norm("embeddings.LayerNorm", x)?;
            for l in 0..cfg.layers {
                let p = format!("encoder.layer.{l}");
                let a = m.attention(
                    &format!("{p}.attention.self"),
                    &format!("{p}.attention.output.dense"),
                    x,
                    false,
                )?;
                let a = m.b.add(format!("{p}.attention.output.add"), a, x)?;
                let a = m.layer_norm(&format!("{p}.attention.output.LayerNorm"), a)?;
                let f = m.linear(&format!("{p}.intermediate.dense"), a, cfg.intermediate)?;
                let f = m.b.unary(
                    format!("{p}.intermediate.gelu"),
                    Unary::Gelu { tanh: false },
                    f,
                )?;
                let f = m.linear(&format!("{p}.output.dense"), f, h)?;
                let f = m.b.add(format!("{p}.output.add"), f, a)?;
                x = m.layer_norm(&format!("{p}.output.LayerNorm"), f)?;
            }
            m.b.rename(x, "last_hidden_state");
            m.b.output(x);
            // The pooler: the first token's state through a dense layer and tanh.
            let first = Op::Slice(Slice {
                starts: vec![0, 0, 0],
                steps: vec![1, 1, 1],
                sizes: vec![batch, 1, h],
            });
            let t0 = m.b.node("pooler.first_token", first, &[x])?;
            let t0 = m.b.node(
                "pooler.select",
                Op::Reshape(Reshape {
                    shape: vec![batch, h],
                }),
                &[t0],
            )?;
            let w = m.normal("pooler.dense.weight", &[h, h]);
            let bias = m.small("pooler.dense.bias", &[h]);
            let gemm = Gemm {
                alpha: 1.0,
                beta: 1.0,
                trans_a: false,
                trans_b: true,
            };
            let y = m.b.node("pooler.dense", Op::Gemm(gemm), &[t0, w, bias])?;
            let y = m.b.unary("pooler.activation", Unary::Tanh, y)?;
            m.b.rename(y, "pooler_output");
            m.b.output(y);
        }
        Family::Gpt2 => {
            let wte = m.normal("wte.weight", &[v, h]);
            let x =
                m.b.node("wte", Op::Gather(Gather { axis: 0 }), &[wte, ids])?;
            let pos = m.normal_rows("wpe.weight", cfg.max_positions, seq);
            let mut x = m.b.add("wpe.add", x, pos)?;
            for l in 0..cfg.layers {
                let p = format!("h.{l}");
                let a = m.layer_norm(&format!("{p}.ln_1"), x)?;
                let a = m.attention(&format!("{p}.attn"), &format!("{p}.attn.c_proj"), a, true)?;
                x = m.b.add(format!("{p}.attn.add"), x, a)?;
                let f = m.layer_norm(&format!("{p}.ln_2"), x)?;
                let f = m.linear(&format!("{p}.mlp.c_fc"), f, cfg.intermediate)?;
                let f =
                    m.b.unary(format!("{p}.mlp.act"), Unary::Gelu { tanh: true }, f)?;
                let f = m.linear(&format!("{p}.mlp.c_proj"), f, h)?;
                x = m.b.add(format!("{p}.mlp.add"), x, f)?;
            }
            let x = m.layer_norm("ln_f", x)?;
            m.b.rename(x, "last_hidden_state");
            m.b.output(x);
        }
    }
    m.b.finish()
}

/// A model under construction.
struct Model {
    b: GraphBuilder,
    seed: u64,
    cfg: TransformerConfig,
    batch: usize,
    seq: usize,
}

impl Model {
    /// `n` values uniform in `[-bound, bound)`, drawn for weight `name`.
    fn uniform(&self, name: &str, n: usize, bound: f64) -> Vec<f32> {
        let mut rng = super::weight_rng(self.seed, name);
        (0..n)
            .map(|_| {
                // 53 random bits as a float in [0, 1), then to [-1, 1).
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                ((2.0 * u - 1.0) * bound) as f32
            })
            .collect()
    }

    fn weight(&mut self, name: &str, shape: &[usize], values: Vec<f32>) -> TensorId {
        // `values` holds the product of `shape` elements (made just before).
        let data = ArrayD::from_shape_vec(IxDyn(shape), values).expect("values fill the shape");
        self.b.weight(name, data)
    }

    /// A weight of standard deviation 0.02 (Hugging Face's initializer range).
    fn normal(&mut self, name: &str, shape: &[usize]) -> TensorId {
        let n = shape.iter().product();
        let values = self.uniform(name, n, 0.02 * 3f64.sqrt());
        self.weight(name, shape, values)
    }

    /// A small bias (standard deviation 0.01).
    fn small(&mut self, name: &str, shape: &[usize]) -> TensorId {
        let n = shape.iter().product();
        let values = self.uniform(name, n, 0.01 * 3f64.sqrt());
        self.weight(name, shape, values)
    }

    /// The first `rows` rows of an embedding table of `total` rows, `[1, rows, hidden]`:
    /// what a Gather of constant positions folds to.
    fn normal_rows(&mut self, name: &str, total: usize, rows: usize) -> TensorId {
        let h = self.cfg.hidden;
        let mut values = self.uniform(name, total * h, 0.02 * 3f64.sqrt());
        values.truncate(rows * h);
        self.weight(name, &[1, rows, h], values)
    }

    /// `x · W + b` with `W` `{name}.weight` `[in, out]`.
    fn linear(&mut self, name: &str, x: TensorId, out: usize) -> Result<TensorId, GraphError> {
        let shape = &self.b.graph().tensor(x).shape;
        let inp = shape[shape.len() - 1];
        let w = self.normal(&format!("{name}.weight"), &[inp, out]);
        let bias = self.small(&format!("{name}.bias"), &[out]);
        let y = self.b.node(format!("{name}.matmul"), Op::MatMul, &[x, w])?;
        self.b.add(name, y, bias)
    }

    /// Layer norm over the last dimension, weight near 1 and bias near 0.
    fn layer_norm(&mut self, name: &str, x: TensorId) -> Result<TensorId, GraphError> {
        let h = self.cfg.hidden;
        let g: Vec<f32> = self
            .uniform(&format!("{name}.weight"), h, 0.1)
            .into_iter()
            .map(|v| 1.0 + v)
            .collect();
        let g = self.weight(&format!("{name}.weight"), &[h], g);
        let bias = self.uniform(&format!("{name}.bias"), h, 0.1);
        let bias = self.weight(&format!("{name}.bias"), &[h], bias);
        let rank = self.b.graph().tensor(x).shape.len();
        let op = Op::LayerNorm(LayerNorm {
            axis: rank - 1,
            epsilon: self.cfg.epsilon,
            rms: false,
        });
        self.b.node(name, op, &[x, g, bias])
    }

    /// Multi-head self-attention of `x` `[b, s, h]` and its output projection `out`:
    /// BERT's separate query/key/value layers, or GPT-2's fused `c_attn` split in three.
    fn attention(
        &mut self,
        p: &str,
        out: &str,
        x: TensorId,
        causal: bool,
    ) -> Result<TensorId, GraphError> {
        let TransformerConfig {
            hidden: h,
            heads: nh,
            ..
        } = self.cfg;
        let (b, s, d) = (self.batch, self.seq, h / nh);
        let (q, k, v) = if causal {
            let qkv = self.linear(&format!("{p}.c_attn"), x, 3 * h)?;
            let part = |m: &mut Model, i: usize, tag: &str| {
                let op = Op::Slice(Slice {
                    starts: vec![0, 0, i * h],
                    steps: vec![1, 1, 1],
                    sizes: vec![b, s, h],
                });
                m.b.node(format!("{p}.split_{tag}"), op, &[qkv])
            };
            (
                part(self, 0, "q")?,
                part(self, 1, "k")?,
                part(self, 2, "v")?,
            )
        } else {
            (
                self.linear(&format!("{p}.query"), x, h)?,
                self.linear(&format!("{p}.key"), x, h)?,
                self.linear(&format!("{p}.value"), x, h)?,
            )
        };
        let heads = |m: &mut Model, t: TensorId, tag: &str, perm: Vec<usize>| {
            let r = m.b.node(
                format!("{p}.{tag}_heads"),
                Op::Reshape(Reshape {
                    shape: vec![b, s, nh, d],
                }),
                &[t],
            )?;
            m.b.node(
                format!("{p}.{tag}_transpose"),
                Op::Transpose(Transpose { perm }),
                &[r],
            )
        };
        let q = heads(self, q, "q", vec![0, 2, 1, 3])?;
        // Kᵀ: [b, nh, d, s].
        let k = heads(self, k, "k", vec![0, 2, 3, 1])?;
        let v = heads(self, v, "v", vec![0, 2, 1, 3])?;
        let scores = self.b.node(format!("{p}.scores"), Op::MatMul, &[q, k])?;
        let scale = self.b.weight(
            format!("{p}.scale"),
            ArrayD::from_elem(IxDyn(&[]), (1.0 / (d as f64).sqrt()) as f32),
        );
        let mut scores = self
            .b
            .binary(format!("{p}.scaled"), Binary::Mul, scores, scale)?;
        if causal {
            // Later positions masked by the most negative f32 (GPT-2's `finfo.min`).
            let mask: Vec<f32> = (0..s * s)
                .map(|i| if i % s > i / s { f32::MIN } else { 0.0 })
                .collect();
            let mask = self.weight(&format!("{p}.causal_mask"), &[1, 1, s, s], mask);
            scores = self.b.add(format!("{p}.masked"), scores, mask)?;
        }
        let probs = self.b.node(
            format!("{p}.softmax"),
            Op::Softmax(Softmax { axis: 3 }),
            &[scores],
        )?;
        let ctx = self
            .b
            .node(format!("{p}.context"), Op::MatMul, &[probs, v])?;
        let ctx = self.b.node(
            format!("{p}.context_transpose"),
            Op::Transpose(Transpose {
                perm: vec![0, 2, 1, 3],
            }),
            &[ctx],
        )?;
        let ctx = self.b.node(
            format!("{p}.context_merge"),
            Op::Reshape(Reshape {
                shape: vec![b, s, h],
            }),
            &[ctx],
        )?;
        self.linear(out, ctx, h)
    }
}
