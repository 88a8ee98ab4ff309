//! Fixtures shared by the `model` test binaries that generate (a test crate cannot use
//! another's).

// Each test binary takes the parts it needs.
#![allow(dead_code)]

use weft_graph::passes::Precision;
use weft_graph::zoo::llama::{LlamaConfig, Seeded};
use weft_graph::zoo::llama_step::{ReferencePick, greedy_reference, llama_step};
use weft_model::{CompileOptions, CompiledModel, Generator};
use weft_runtime::Device;

/// Two layers of 64, 4 heads over 2 KV heads, a vocabulary of 300.
pub fn tiny() -> LlamaConfig {
    LlamaConfig {
        layers: 2,
        hidden: 64,
        heads: 4,
        kv_heads: 2,
        head_dim: 16,
        intermediate: 128,
        vocab: 300,
        max_positions: 64,
        ..LlamaConfig::tiny_llama()
    }
}

/// Generated ids (`got[sequence][step]`) against the float64 reference's greedy picks
/// (`picks[step][sequence]`): equal, except that in f16 a sequence may part from the
/// reference at a step whose top two logits are within 2·10⁻² (a near tie f16 may flip),
/// after which it is followed no further. `what` names the run in a failure.
pub fn assert_reference_ids(
    got: &[Vec<i32>],
    picks: &[Vec<ReferencePick>],
    precision: Precision,
    what: &str,
) {
    for (b, ids) in got.iter().enumerate() {
        for (k, &id) in ids.iter().enumerate() {
            let want = &picks[k][b];
            if id == want.id {
                continue;
            }
            assert!(
                precision == Precision::F16 && want.margin < 2e-2,
                "{what} {precision:?}: sequence {b} step {k}: {id}, the reference {} (margin {})",
                want.id,
                want.margin
            );
            break;
        }
    }
}

/// Greedy generation of `new` tokens after `prompt` (every sequence as long) through
/// [`tiny`] with weights from `seed`, its prefill and decode steps compiled with `options`
/// for `dev`, the ids checked against the float64 reference's picks
/// ([`assert_reference_ids`], `what` naming the run); `decode` sees the decode step first,
/// for the caller's own assertions on it.
pub fn generates_the_reference(
    dev: &mut dyn Device,
    seed: u64,
    (prompt, new): (&[Vec<i32>], usize),
    options: &CompileOptions,
    what: &str,
    decode: &dyn Fn(&CompiledModel),
) {
    let cfg = tiny();
    let (batch, len) = (prompt.len(), prompt[0].len());
    let picks = greedy_reference(&cfg, &mut Seeded(seed), prompt, new).unwrap();
    let limits = dev.limits();
    let step = |seq| {
        let dtype = options.precision.dtype();
        let g = llama_step(
            "tiny",
            &cfg,
            (batch, seq, len + new),
            dtype,
            &mut Seeded(seed),
        )
        .unwrap();
        CompiledModel::compile(&g, &limits, options).unwrap()
    };
    let decode_step = step(1);
    decode(&decode_step);
    let gen_ = Generator::load(&step(len), &decode_step, dev).unwrap();
    let got = gen_.generate(dev, prompt, new).unwrap();
    gen_.free(dev);
    assert_reference_ids(&got.ids, &picks, options.precision, what);
}
