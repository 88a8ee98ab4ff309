//! `zoo:llama` against Hugging Face's parameter count, what the passes make of it, its
//! activations' scale and its refusals.

use ndarray::{ArrayD, IxDyn};
use weft_ir::dtype::DType;

use super::llama::{LlamaConfig, LlamaError, Seeded, llama};
use super::*;
use crate::op::{LayerNorm, Op, Unary};
use crate::partition::Rule;
use crate::passes::{PIPELINE, PassContext, run_pipeline};
use crate::reference::evaluate_all;

/// A small model of TinyLlama's shape: grouped KV heads (8 over 2).
fn small() -> LlamaConfig {
    LlamaConfig {
        layers: 2,
        hidden: 256,
        heads: 8,
        kv_heads: 2,
        head_dim: 32,
        intermediate: 512,
        vocab: 1000,
        max_positions: 64,
        ..LlamaConfig::tiny_llama()
    }
}

/// Hugging Face's parameter count of a `LlamaForCausalLM` of `c`.
fn hf_parameters(c: &LlamaConfig) -> usize {
    let (h, d) = (c.hidden, c.head_dim);
    let attention = h * c.heads * d * 2 + h * c.kv_heads * d * 2;
    let layer = 2 * h + attention + 3 * h * c.intermediate;
    let head = if c.tie_word_embeddings {
        0
    } else {
        c.vocab * h
    };
    c.vocab * h + c.layers * layer + h + head
}

#[test]
fn tiny_llamas_sizes_are_tinyllama_1_1b() {
    // TinyLlama-1.1B's published count, from the sizes alone (building it draws 1.1G
    // weights).
    assert_eq!(hf_parameters(&LlamaConfig::tiny_llama()), 1_100_048_384);
}

#[test]
fn llama_has_hugging_faces_parameters() {
    for tied in [false, true] {
        let c = LlamaConfig {
            tie_word_embeddings: tied,
            ..small()
        };
        let seq = 16;
        let g = llama("llama", &c, 2, seq, &mut Seeded(0)).unwrap();
        // The zoo adds its constants: per norm a 2 and an ε, per layer a scale, the
        // rotary tables and the causal mask; a tied head is a transposed copy.
        let norms = 2 * c.layers + 1;
        let added = 2 * norms + c.layers + 2 * seq * c.head_dim + seq * seq;
        let copy = if tied { c.vocab * c.hidden } else { 0 };
        assert_eq!(
            g.parameter_count(),
            hf_parameters(&c) + added + copy,
            "tied {tied}"
        );
        assert_eq!(g.tensor(g.inputs[0]).shape, [2, seq]);
        assert_eq!(g.tensor(g.inputs[0]).dtype, DType::I32);
        assert_eq!(g.tensor(g.outputs[0]).shape, [2, seq, c.vocab]);
        assert_eq!(g.tensor(g.outputs[0]).name, "logits");
    }
}

#[test]
fn the_passes_find_rms_norms_silu_attention_and_siblings() {
    let c = small();
    let g = llama("llama", &c, 1, 16, &mut Seeded(0)).unwrap();
    let (after, reports) = run_pipeline(&g, PIPELINE, &PassContext::default()).unwrap();
    let count = |f: &dyn Fn(&Op) -> bool| after.nodes.iter().filter(|n| f(&n.op)).count();
    let rms = count(&|op| matches!(op, Op::LayerNorm(LayerNorm { rms: true, .. })));
    assert_eq!(rms, 2 * c.layers + 1);
    assert_eq!(count(&|op| *op == Op::Unary(Unary::Silu)), c.layers);
    let causal = count(&|op| matches!(op, Op::Attention(a) if a.causal));
    assert_eq!(causal, c.layers);
    assert_eq!(count(&|op| matches!(op, Op::Softmax(_))), 0);
    // q/k/v into one product and gate/up into one: 7 products a layer become 4.
    let products = count(&|op| *op == Op::MatMul);
    assert_eq!(products, c.layers * 4 + 1, "{reports:?}");
}

#[test]
fn llama_activations_stay_unit_scale() {
    let c = small();
    let seq = 12;
    let g = llama("llama", &c, 1, seq, &mut Seeded(3)).unwrap();
    let ids = ArrayD::from_shape_fn(IxDyn(&[1, seq]), |ix| ((ix[1] * 131 + 7) % c.vocab) as f64);
    let values = evaluate_all(&g, &[ids]).unwrap();
    let mut worst = (0.0f64, String::new());
    for n in &g.nodes {
        // The mask's additions hold f32::MIN by design; inside an RMS norm (one node
        // after the passes, computed in f32) 1/rms of the embedding is about 50.
        if n.name.ends_with(".masked") || n.name.contains("norm.") {
            continue;
        }
        let m = values[&n.output].fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(m.is_finite(), "`{}` is not finite", n.name);
        if m > worst.0 {
            worst = (m, n.name.clone());
        }
    }
    let logits = &values[&g.outputs[0]];
    let mean = logits.mean().unwrap();
    let std = logits.mapv(|v| (v - mean).powi(2)).mean().unwrap().sqrt();
    assert!(worst.0 < 50.0, "`{}` reaches {}", worst.1, worst.0);
    assert!(std > 1e-2, "the logits are all alike (std {std})");
}

#[test]
fn bad_llama_sizes_are_refused() {
    let opts = ZooOptions {
        seq: 8,
        ..ZooOptions::for_model("llama").unwrap()
    };
    let odd = LlamaConfig {
        kv_heads: 3,
        ..small()
    };
    let e = build_llama(&odd, &opts).unwrap_err();
    assert!(
        e.to_string()
            .contains("8 heads do not split over 3 KV heads"),
        "{e}"
    );
    let long = ZooOptions { seq: 65, ..opts };
    assert_eq!(
        build_llama(&small(), &long).unwrap_err(),
        ZooError::BadSeq {
            model: "llama",
            seq: 65,
            max: 64
        }
    );
    let zero = LlamaConfig {
        intermediate: 0,
        ..small()
    };
    assert!(matches!(
        llama("l", &zero, 1, 4, &mut Seeded(0)),
        Err(LlamaError::Config(m)) if m.contains("intermediate")
    ));
    assert!(takes_tokens("llama") && takes_tokens("gpt2") && !takes_tokens("resnet50"));
}

/// Sizes whose weights could not be held are refused before any is drawn (a 10⁶-wide
/// model was `memory allocation of 4000000000000 bytes failed`, exit 134).
#[test]
fn llama_sizes_past_what_weft_holds_are_refused_before_drawing() {
    let wide = LlamaConfig {
        hidden: 1_000_000,
        vocab: 1_000_000,
        ..small()
    };
    let deep = LlamaConfig {
        layers: 100_000,
        ..small()
    };
    let big = LlamaConfig {
        layers: 1000,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        head_dim: 128,
        intermediate: 28672,
        vocab: 32000,
        ..small()
    };
    for (c, word) in [(wide, "i32"), (deep, "layers"), (big, "parameters")] {
        assert!(
            matches!(llama("l", &c, 1, 4, &mut Seeded(0)), Err(LlamaError::Config(ref m)) if m.contains(word)),
            "{word}"
        );
    }
}

#[test]
fn the_keys_rotary_is_stored_before_the_grouped_heads_broadcast() {
    // 8 query heads over 1 KV head (TinyLlama's 32 over 4): the keys' rotary, computed at
    // the attention's loads, would be computed 8 times over per read (the Expand repeats
    // each KV head), each read twice at 128 keys (64 query rows a tile). The
    // rule prices it per element before the broadcast and stores it there; the Expand and
    // the transposes stay in the attention's loads, which then read a stored tensor.
    use crate::partition::{Shown, partition};
    let c = LlamaConfig {
        kv_heads: 1,
        max_positions: 128,
        ..small()
    };
    let (seq, batch) = (128, 2);
    let g = llama("llama", &c, batch, seq, &mut Seeded(0)).unwrap();
    let (g, _) = run_pipeline(&g, PIPELINE, &PassContext::default()).unwrap();
    let p = partition(&g);
    let shown = Shown {
        graph: &g,
        partition: &p,
        schedules: None,
    }
    .to_string();
    let spread = (c.heads / c.kv_heads) as f64;
    let keys: Vec<_> = p
        .decisions
        .iter()
        .filter(|d| matches!(g.nodes[d.anchor.0].op, Op::Attention(_)) && d.input == 1)
        .collect();
    assert_eq!(keys.len(), c.layers, "{shown}");
    for d in keys {
        assert_eq!(d.spread, spread, "{d:?}");
        assert!(!d.inlined && d.work * d.reads * d.spread > 64.0, "{d:?}");
        assert!(matches!(g.nodes[d.stored.0].op, Op::Rotary), "{shown}");
        // The stored group is the rotary's: [batch, kv heads, seq, head dim], not the
        // broadcast [batch, heads, seq, head dim].
        let group = p
            .groups
            .iter()
            .find(|gr| gr.root == d.stored)
            .expect("a group");
        let stored = g.tensor(group.output);
        assert_eq!(
            stored.shape,
            [batch, c.kv_heads, seq, c.head_dim],
            "{shown}"
        );
        // The attention's own group still reads through the Expand.
        let anchor = p
            .groups
            .iter()
            .find(|gr| gr.root == d.anchor)
            .expect("the anchor");
        assert!(
            anchor
                .prologue
                .iter()
                .any(|n| matches!(g.nodes[n.0].op, Op::Expand(_))),
            "{shown}"
        );
    }
    assert!(
        shown.contains("× read 2.0× × broadcast 8× = 96 > 64"),
        "{shown}"
    );
    assert!(shown.contains("before the broadcast)"), "{shown}");
    // The queries' rotary (read once, no broadcast) is priced by the staged rule at 128
    // query rows a head: a kernel of its own, the attention's query tiles copied.
    let queries: Vec<_> = p
        .decisions
        .iter()
        .filter(|d| matches!(g.nodes[d.anchor.0].op, Op::Attention(_)) && d.input == 0)
        .collect();
    assert_eq!(queries.len(), c.layers, "{shown}");
    for d in queries {
        assert!(
            !d.inlined && d.rule == Rule::Staged && d.spread == 1.0,
            "{d:?}"
        );
        assert!(matches!(g.nodes[d.stored.0].op, Op::Rotary), "{shown}");
    }
}

#[test]
fn a_short_prompts_queries_keep_their_rotary_in_the_attentions_loads() {
    // Below a query tile of rows a head (ATTENTION_STAGED_ROWS), the queries' rotary is
    // priced by the tiled rule (read once: 6 ≤ 64) and stays in the loads; at the tile it
    // is a kernel of its own.
    use crate::partition::cost::ATTENTION_STAGED_ROWS;
    use crate::partition::partition;
    let c = LlamaConfig {
        max_positions: 128,
        ..small()
    };
    for (seq, inlined) in [
        (ATTENTION_STAGED_ROWS - 1, true),
        (ATTENTION_STAGED_ROWS, false),
    ] {
        let g = llama("llama", &c, 1, seq, &mut Seeded(0)).unwrap();
        let (g, _) = run_pipeline(&g, PIPELINE, &PassContext::default()).unwrap();
        let p = partition(&g);
        let queries: Vec<_> = p
            .decisions
            .iter()
            .filter(|d| matches!(g.nodes[d.anchor.0].op, Op::Attention(_)) && d.input == 0)
            .collect();
        assert_eq!(queries.len(), c.layers, "seq {seq}");
        for d in queries {
            let rule = if inlined { Rule::Tiled } else { Rule::Staged };
            assert_eq!((d.inlined, d.rule), (inlined, rule), "seq {seq}: {d:?}");
        }
    }
}
