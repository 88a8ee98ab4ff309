//! weft's graph level: a whole model as a graph of typed operators on tensors with
//! static shapes, dtypes and layouts — built in Rust ([`GraphBuilder`]) or imported —
//! with shape and dtype inference that names the node and the input at fault, and a
//! float64 reference evaluator ([`reference::evaluate`]) to check compiled models against.
//!
//! This is the top of weft's one pipeline: model → graph passes → partition → per
//! sub-graph (template → `Func` → fusion → lower → `Kernel` → emit) → plan → device.

pub mod builder;
mod error;
pub mod graph;
pub mod indices;
pub mod inputs;
pub mod op;
pub mod partition;
pub mod passes;
pub mod reference;
pub mod symbolic;
pub mod tensor;
pub mod zoo;

pub use builder::GraphBuilder;
pub use graph::{Graph, GraphError, Layout, Node, NodeId, Symbol, Tensor, TensorId};
pub use op::Op;
pub use op::cast;
