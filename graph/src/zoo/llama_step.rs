//! One generation step of the Llama-family decoder of [`super::llama`], over a KV cache:
//! `seq` new tokens per sequence at a position the run reads from device data, so that
//! one compiled step serves every position. The prefill step is this step with the
//! prompt's tokens at position 0; the decode step is it with one token.
//!
//! Inputs: `input_ids` i32 `[batch, seq]`, `position` i32 `[batch]` (the cache row the
//! first new token takes), and per layer `past_key.{l}` and `past_value.{l}`
//! `[batch, kv_heads, capacity, head_dim]`. Per layer the new tokens' rotated keys and
//! their values are written into the caches at the position ([`TensorScatter`], in place
//! on the device: the caches are state the caller keeps between steps), and attention
//! reads the caches, rows past each query's own position masked. Grouped KV heads are
//! read without repeating them: the queries of the `heads / kv_heads` heads one KV head
//! serves are rows of one product with that head's cache. Rotary cos and sin come from
//! tables of `capacity` positions, gathered at each token's position.
//!
//! Outputs: `next_id` i32 `[batch, 1]`, the argmax of the last token's logits (greedy
//! sampling on the device: a run reads one id per sequence, not the logits), then
//! `present_key.{l}` and `present_value.{l}` (the caches, updated).
//!
//! [`llama_prefill`] is the prefill for every prompt length `1..=max`: the step at `max`
//! tokens that also takes the prompt's length `n` (`prompt_length`, i32 `[1]`) as device
//! data, and samples row `n − 1` instead of the last. The host pads the ids past `n`
//! (with id 0); what the padded rows compute never reaches a row below `n` (each query
//! row sees cache rows up to its own position only, and the padded rows lie after every
//! real one), and what they write into the caches (rows `n..max`, finite: a token's keys)
//! a decode step overwrites before it reads it (the step at position `p` writes row `p`,
//! then reads rows `..=p`; rows past `p` are masked).

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;

use super::llama::{Builder, LlamaConfig, LlamaError, LlamaWeights, rotary_table, transposed};
use crate::builder::GraphBuilder;
use crate::graph::{Graph, GraphError, TensorId};
use crate::op::{
    Binary, Cast, Gather, Op, Reduce, ReduceKind, Reshape, Slice, Softmax, TensorScatter, Transpose,
};

/// The name of the position input.
pub const POSITION: &str = "position";
/// The name of the next-token output.
pub const NEXT_ID: &str = "next_id";
/// The name of [`llama_prefill`]'s prompt-length input.
pub const PROMPT_LENGTH: &str = "prompt_length";

/// The cache input of layer `l` (`key` or `value`).
pub fn past_name(kind: &str, l: usize) -> String {
    format!("past_{kind}.{l}")
}

/// The step of `cfg` named `name` taking `seq` new tokens of `batch` sequences into
/// caches of `capacity` positions stored as `cache` (f32, or f16 for a run in f16: the
/// caches are state the user never sees, and Hugging Face keeps them in the model's
/// type; the new keys and values are rounded to it as they are written, and attention
/// reads them as they are stored), its weights from `weights`.
pub fn llama_step<W: LlamaWeights>(
    name: &str,
    cfg: &LlamaConfig,
    sizes: (usize, usize, usize),
    cache: DType,
    weights: &mut W,
) -> Result<Graph, LlamaError<W::Error>> {
    step(name, cfg, sizes, cache, weights, false)
}

/// The prefill of `cfg` for prompts of `1..=max_prompt` tokens of `batch` sequences at
/// position 0 (see the module): [`llama_step`] at `max_prompt` tokens with the input
/// [`PROMPT_LENGTH`] (i32 `[1]`, the prompts' length `n`), its `next_id` the argmax of
/// token `n − 1`'s logits. One compile serves every prompt length of the range.
pub fn llama_prefill<W: LlamaWeights>(
    name: &str,
    cfg: &LlamaConfig,
    (batch, max_prompt, capacity): (usize, usize, usize),
    cache: DType,
    weights: &mut W,
) -> Result<Graph, LlamaError<W::Error>> {
    step(
        name,
        cfg,
        (batch, max_prompt, capacity),
        cache,
        weights,
        true,
    )
}

/// [`llama_step`], or with `ranged` [`llama_prefill`].
fn step<W: LlamaWeights>(
    name: &str,
    cfg: &LlamaConfig,
    (batch, seq, capacity): (usize, usize, usize),
    cache: DType,
    weights: &mut W,
    ranged: bool,
) -> Result<Graph, LlamaError<W::Error>> {
    cfg.check(seq).map_err(LlamaError::Config)?;
    if batch == 0 {
        return Err(LlamaError::Config("the batch must be at least 1".into()));
    }
    if ![DType::F32, DType::F16].contains(&cache) {
        return Err(LlamaError::Config(format!(
            "caches are stored as f32 or f16, not {cache}"
        )));
    }
    if capacity < seq || capacity > cfg.max_positions {
        return Err(LlamaError::Config(format!(
            "a cache of {capacity} positions cannot take {seq} tokens within the model's {} positions",
            cfg.max_positions
        )));
    }
    let mut m = Builder {
        b: GraphBuilder::new(name),
        cfg: *cfg,
        batch,
        seq,
        weights,
    };
    let (h, v, d) = (cfg.hidden, cfg.vocab, cfg.head_dim);
    let ids = m.b.input("input_ids", &[batch, seq], DType::I32);
    let position = m.b.input(POSITION, &[batch], DType::I32);
    let length = ranged.then(|| m.b.input(PROMPT_LENGTH, &[1], DType::I32));
    let mut caches = Vec::with_capacity(cfg.layers);
    for l in 0..cfg.layers {
        let shape = [batch, cfg.kv_heads, capacity, d];
        let k = m.b.input(past_name("key", l), &shape, cache);
        let val = m.b.input(past_name("value", l), &shape, cache);
        caches.push((k, val));
    }
    let embed = m.get("model.embed_tokens.weight", &[v, h])?;
    let table = m.b.weight("model.embed_tokens.weight", embed.clone());
    let mut x = m.b.node(
        "model.embed_tokens",
        Op::Gather(Gather { axis: 0 }),
        &[table, ids],
    )?;
    let mut at = Positions::new(&mut m, position, capacity)?;
    if let Some(n) = length {
        at.written = Some(below_length(&mut m, n)?);
    }
    let mut presents = Vec::with_capacity(2 * cfg.layers);
    for (l, &(past_k, past_v)) in caches.iter().enumerate() {
        let p = format!("model.layers.{l}");
        let a = m.rms_norm(&format!("{p}.input_layernorm"), x)?;
        let (a, k, val) = attention(&mut m, &format!("{p}.self_attn"), a, &at, past_k, past_v)?;
        presents.push((l, k, val));
        x = m.b.add(format!("{p}.self_attn.residual"), x, a)?;
        let f = m.rms_norm(&format!("{p}.post_attention_layernorm"), x)?;
        let f = m.mlp(&format!("{p}.mlp"), f)?;
        x = m.b.add(format!("{p}.mlp.residual"), x, f)?;
    }
    // Only the last token's logits are sampled: token seq − 1, or in a prefill for a
    // range token n − 1 (an index the kernel reads from the device; integers, as the
    // positions).
    let x = match length {
        None => {
            let last = Op::Slice(Slice {
                starts: vec![0, seq - 1, 0],
                steps: vec![1; 3],
                sizes: vec![batch, 1, h],
            });
            m.node("model.last_token".into(), last, &[x])?
        }
        Some(n) => {
            let one = m.b.weight(
                "model.last_token.one.f32",
                ArrayD::from_elem(IxDyn(&[1]), 1.0),
            );
            let one = m.b.node(
                "model.last_token.one",
                Op::Cast(Cast { to: DType::I32 }),
                &[one],
            )?;
            let row = m.b.binary("model.last_token.row", Binary::Sub, n, one)?;
            m.node(
                "model.last_token".into(),
                Op::Gather(Gather { axis: 1 }),
                &[x, row],
            )?
        }
    };
    let x = m.rms_norm("model.norm", x)?;
    let head = if cfg.tie_word_embeddings {
        transposed(embed)
    } else {
        transposed(m.get("lm_head.weight", &[v, h])?)
    };
    let head = m.b.weight("lm_head.weight", head);
    let logits = m.node("lm_head".into(), Op::MatMul, &[x, head])?;
    let next = argmax(&mut m.b, logits, batch, v)?;
    m.b.output(next);
    for (l, k, val) in presents {
        m.b.rename(k, format!("present_key.{l}"));
        m.b.rename(val, format!("present_value.{l}"));
        m.b.output(k);
        m.b.output(val);
    }
    Ok(m.b.finish()?)
}

/// What every layer reads of the positions.
struct Positions {
    /// `position` itself, the caches' write indices.
    write: TensorId,
    /// Rotary cos and sin at each new token's position, `[batch, 1, seq, head_dim]`.
    cos: TensorId,
    sin: TensorId,
    /// `0` where query row `j` (of `rep · seq`) may see cache row `t`, the most negative
    /// f32 where `t` is past its token's position: `[batch, 1, rep · seq, capacity]`.
    mask: TensorId,
    /// In a prefill for a range, true at the new rows below the prompts' length
    /// (`[1, 1, seq, 1]`): the rows whose keys and values reach the caches as computed;
    /// the rows past it write zeros.
    written: Option<TensorId>,
}

impl Positions {
    fn new<W: LlamaWeights>(
        m: &mut Builder<'_, W>,
        position: TensorId,
        capacity: usize,
    ) -> Result<Positions, GraphError> {
        let (b, s, d) = (m.batch, m.seq, m.cfg.head_dim);
        let rep = m.cfg.heads / m.cfg.kv_heads;
        let reshape = |shape: Vec<usize>| Op::Reshape(Reshape { shape });
        // Positions stay integers: an f16 run stores f32 intermediates as f16, exact to
        // 2048 only, and a longer cache would mask (and rotate by) the wrong rows. The
        // index tables are f32 constants (exact to 2²⁴) cast once, folded at compile.
        let mut ints = |name: &str, table: ArrayD<f32>| -> Result<TensorId, GraphError> {
            let t = m.b.weight(format!("{name}.f32"), table);
            m.b.node(name, Op::Cast(Cast { to: DType::I32 }), &[t])
        };
        let steps = ints(
            "model.position.steps",
            ArrayD::from_shape_fn(IxDyn(&[1, s]), |ix| ix[1] as f32),
        )?;
        // Query row j is token j % seq (the rows of one KV head's query heads, stacked).
        let rows = ints(
            "model.mask.rows",
            ArrayD::from_shape_fn(IxDyn(&[1, 1, rep * s, 1]), |ix| (ix[2] % s) as f32),
        )?;
        let cols = ints(
            "model.mask.cache_rows",
            ArrayD::from_shape_fn(IxDyn(&[1, 1, 1, capacity]), |ix| ix[3] as f32),
        )?;
        // Token i of sequence b sits at position[b] + i.
        let pos =
            m.b.node("model.position.column", reshape(vec![b, 1]), &[position])?;
        let token_pos = m.b.add("model.position.indices", pos, steps)?;
        let mut gathered = |name: &str, f: fn(f64) -> f64| -> Result<TensorId, GraphError> {
            let rows = rotary_table(&m.cfg, capacity, f);
            let rows = ArrayD::from_shape_vec(IxDyn(&[capacity, d]), rows).expect("cap·d");
            let table = m.b.weight(format!("model.rotary_emb.{name}_table"), rows);
            let g = Op::Gather(Gather { axis: 0 });
            let at =
                m.b.node(format!("model.rotary_emb.{name}"), g, &[table, token_pos])?;
            m.b.node(
                format!("model.rotary_emb.{name}.heads"),
                reshape(vec![b, 1, s, d]),
                &[at],
            )
        };
        let cos = gathered("cos", f64::cos)?;
        let sin = gathered("sin", f64::sin)?;
        let pos4 = m.b.node(
            "model.mask.position",
            reshape(vec![b, 1, 1, 1]),
            &[position],
        )?;
        let limit = m.b.add("model.mask.limit", pos4, rows)?;
        let later =
            m.b.binary("model.mask.later", Binary::Greater, cols, limit)?;
        let lowest = m.scalar("model.mask.lowest".into(), f32::MIN);
        let zero = m.scalar("model.mask.zero".into(), 0.0);
        let mask = m.b.node("model.mask", Op::Where, &[later, lowest, zero])?;
        Ok(Positions {
            write: position,
            cos,
            sin,
            mask,
            written: None,
        })
    }
}

/// True at new row `i` where `i < n` (`n` the prompt-length input), `[1, 1, seq, 1]`:
/// integers compared, as the positions.
fn below_length<W: LlamaWeights>(
    m: &mut Builder<'_, W>,
    n: TensorId,
) -> Result<TensorId, GraphError> {
    let rows = ArrayD::from_shape_fn(IxDyn(&[1, 1, m.seq, 1]), |ix| ix[2] as f32);
    let rows = m.b.weight("model.prompt.rows.f32", rows);
    let rows = m.b.node(
        "model.prompt.rows",
        Op::Cast(Cast { to: DType::I32 }),
        &[rows],
    )?;
    m.b.binary("model.prompt.written", Binary::Less, rows, n)
}

/// `LlamaAttention` of `x` `[b, s, hidden]` over the caches: the output projection's
/// result and the updated caches.
fn attention<W: LlamaWeights>(
    m: &mut Builder<'_, W>,
    p: &str,
    x: TensorId,
    at: &Positions,
    past_k: TensorId,
    past_v: TensorId,
) -> Result<(TensorId, TensorId, TensorId), LlamaError<W::Error>> {
    let LlamaConfig {
        hidden: h,
        heads,
        kv_heads: kv,
        head_dim: d,
        qkv_bias,
        o_bias,
        ..
    } = m.cfg;
    let (b, s) = (m.batch, m.seq);
    let rep = heads / kv;
    let q = m.linear(&format!("{p}.q_proj"), x, h, heads * d, qkv_bias)?;
    let k = m.linear(&format!("{p}.k_proj"), x, h, kv * d, qkv_bias)?;
    let v = m.linear(&format!("{p}.v_proj"), x, h, kv * d, qkv_bias)?;
    let q = m.split_heads(&format!("{p}.q"), q, heads)?;
    let k = m.split_heads(&format!("{p}.k"), k, kv)?;
    let v = m.split_heads(&format!("{p}.v"), v, kv)?;
    let q = m.rope(&format!("{p}.q_rope"), q, heads, at.cos, at.sin)?;
    let k = m.rope(&format!("{p}.k_rope"), k, kv, at.cos, at.sin)?;
    // The padded rows' keys and values written as zeros, whatever those rows hold: a
    // kernel that leaves rows past the length undone (their work bounded by it) leaves
    // them holding anything, and a non-finite row in a cache, masked or not, reaches the
    // softmax's sums of a later step.
    let (k, v) = match at.written {
        None => (k, v),
        Some(w) => {
            let zero = m.scalar(format!("{p}.padded_rows"), 0.0);
            (
                m.node(format!("{p}.k_written"), Op::Where, &[w, k, zero])?,
                m.node(format!("{p}.v_written"), Op::Where, &[w, v, zero])?,
            )
        }
    };
    // The new rows in the caches' type (where it is not f32: rounded as they are
    // written), and the caches read back as f32 values, which a run in f16 stores as
    // f16 (the casts are index maps inlined into the update's and attention's loads).
    let cache = m.b.graph().tensor(past_k).dtype;
    let (k, v) = if cache == DType::F32 {
        (k, v)
    } else {
        let to = Op::Cast(Cast { to: cache });
        (
            m.node(format!("{p}.k_cache_type"), to.clone(), &[k])?,
            m.node(format!("{p}.v_cache_type"), to, &[v])?,
        )
    };
    let write = Op::TensorScatter(TensorScatter { axis: 2 });
    let keys = m.node(
        format!("{p}.key_cache"),
        write.clone(),
        &[past_k, k, at.write],
    )?;
    let values = m.node(format!("{p}.value_cache"), write, &[past_v, v, at.write])?;
    let (keys_read, values_read) = if cache == DType::F32 {
        (keys, values)
    } else {
        let to = Op::Cast(Cast { to: DType::F32 });
        (
            m.node(format!("{p}.keys_f32"), to.clone(), &[keys])?,
            m.node(format!("{p}.values_f32"), to, &[values])?,
        )
    };
    // Query heads h = kv_head · rep + r: the rows of KV head kv_head's product.
    let grouped = Op::Reshape(Reshape {
        shape: vec![b, kv, rep * s, d],
    });
    let q = m.node(format!("{p}.q_grouped"), grouped, &[q])?;
    let kt = m.node(
        format!("{p}.k_t"),
        Op::Transpose(Transpose {
            perm: vec![0, 1, 3, 2],
        }),
        &[keys_read],
    )?;
    let scores = m.node(format!("{p}.scores"), Op::MatMul, &[q, kt])?;
    let scale = m.scalar(format!("{p}.scaling"), (1.0 / (d as f64).sqrt()) as f32);
    let scores =
        m.b.binary(format!("{p}.scaled"), Binary::Mul, scores, scale)?;
    let scores = m.b.add(format!("{p}.masked"), scores, at.mask)?;
    let probs = m.node(
        format!("{p}.softmax"),
        Op::Softmax(Softmax { axis: 3 }),
        &[scores],
    )?;
    let ctx = m.node(format!("{p}.context"), Op::MatMul, &[probs, values_read])?;
    let heads_back = Op::Reshape(Reshape {
        shape: vec![b, heads, s, d],
    });
    let ctx = m.node(format!("{p}.context_heads"), heads_back, &[ctx])?;
    let out = m.output_projection(p, ctx, [b, s, heads, d], h, o_bias)?;
    Ok((out, keys, values))
}

/// The first index of the largest of `logits` `[batch, 1, vocab]`, i32 `[batch, 1]`:
/// where the row reaches its maximum, the index there and `vocab` elsewhere, the least
/// of those. Indices stay integers (an f16 would not hold 32000 exactly).
fn argmax(
    b: &mut GraphBuilder,
    logits: TensorId,
    batch: usize,
    vocab: usize,
) -> Result<TensorId, GraphError> {
    let along = |kind| {
        Op::Reduce(Reduce {
            kind,
            axes: vec![2],
            keep_dims: true,
        })
    };
    let to_i32 = || Op::Cast(Cast { to: DType::I32 });
    let top = b.node("sample.max", along(ReduceKind::Max), &[logits])?;
    let hit = b.binary("sample.hit", Binary::GreaterOrEqual, logits, top)?;
    // In f32, exact to 2^24; a reduction's result is stored in f32 whatever the
    // precision, and the cast to i32 follows it.
    let iota = ArrayD::from_shape_fn(IxDyn(&[vocab]), |ix| ix[0] as f32);
    let iota = b.weight("sample.iota", iota);
    let none = b.weight("sample.none", ArrayD::from_elem(IxDyn(&[]), vocab as f32));
    let index = b.node("sample.index", Op::Where, &[hit, iota, none])?;
    let first = b.node("sample.first", along(ReduceKind::Min), &[index])?;
    let first = b.node("sample.first.i32", to_i32(), &[first])?;
    let id = Op::Reshape(Reshape {
        shape: vec![batch, 1],
    });
    let id = b.node(NEXT_ID, id, &[first])?;
    Ok(id)
}

/// One greedy step of the float64 reference: per sequence, the id picked and the margin
/// between its logit and the runner-up's (how near a tie it was).
#[derive(Clone, Debug, PartialEq)]
pub struct ReferencePick {
    pub id: i32,
    /// The picked logit minus the runner-up's.
    pub margin: f64,
    /// The last position's logits (what a mismatch is explained with).
    pub logits: Vec<f64>,
}

/// Greedy generation by the float64 evaluator over the whole-sequence forward
/// ([`super::llama::llama`], no cache), token by token: the independent reference a
/// cached generation is checked against. `picks[k][b]` is step `k` of sequence `b`.
pub fn greedy_reference<W: LlamaWeights>(
    cfg: &LlamaConfig,
    weights: &mut W,
    prompt: &[Vec<i32>],
    new_tokens: usize,
) -> Result<Vec<Vec<ReferencePick>>, LlamaError<W::Error>> {
    let batch = prompt.len();
    let mut seqs: Vec<Vec<i32>> = prompt.to_vec();
    let mut picks = Vec::with_capacity(new_tokens);
    for _ in 0..new_tokens {
        let len = seqs.first().map_or(0, Vec::len);
        let g = super::llama::llama("reference", cfg, batch, len, weights)?;
        let ids = ArrayD::from_shape_fn(IxDyn(&[batch, len]), |ix| f64::from(seqs[ix[0]][ix[1]]));
        let out = crate::reference::evaluate(&g, &[ids])?;
        let logits = &out[0];
        let mut step = Vec::with_capacity(batch);
        for (b, seq) in seqs.iter_mut().enumerate() {
            let row: Vec<f64> = (0..cfg.vocab)
                .map(|t| logits[IxDyn(&[b, len - 1, t])])
                .collect();
            let mut best = 0;
            for (t, &v) in row.iter().enumerate() {
                if v > row[best] {
                    best = t;
                }
            }
            let second = row
                .iter()
                .enumerate()
                .filter(|&(t, _)| t != best)
                .map(|(_, &v)| v)
                .fold(f64::NEG_INFINITY, f64::max);
            seq.push(best as i32);
            let row = row.clone();
            step.push(ReferencePick {
                id: best as i32,
                margin: row[best] - second,
                logits: row,
            });
        }
        picks.push(step);
    }
    Ok(picks)
}
