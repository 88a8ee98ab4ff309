//! Fixtures shared by the `model` test binaries that generate (a test crate cannot use
//! another's).

use weft_graph::zoo::llama::LlamaConfig;

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
