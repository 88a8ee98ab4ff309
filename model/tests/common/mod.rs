//! Fixtures shared by the `model` test binaries that generate (a test crate cannot use
//! another's).

// Each test binary takes the parts it needs.
#![allow(dead_code)]

use weft_graph::passes::Precision;
use weft_graph::zoo::llama::LlamaConfig;
use weft_graph::zoo::llama_step::ReferencePick;

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
