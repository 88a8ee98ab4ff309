//! weft's whole-model compiler, the rooms below the graph level: each group of a
//! partition lowered to a scheduled, fused function ([`lower`]), intermediate buffers
//! planned by liveness ([`plan`]), and a [`CompiledModel`] that holds the kernels, the
//! plan and the launch list and runs the whole model on any device.

pub mod anchor;
pub mod error;
pub mod lower;

pub use error::ModelError;
pub mod compiled;
pub mod plan;
pub mod tune;

pub use compiled::{CompiledModel, Loaded};

/// The examples of `docs/architecture.md` ("Adding an ONNX op", "Adding a benchmark
/// workload", "Adding a graph pass"), compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../docs/architecture.md")]
pub struct ArchitectureExamples;
