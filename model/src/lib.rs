//! weft's whole-model compiler, the rooms below the graph level: each group of a
//! partition lowered to a scheduled, fused function ([`lower`]), intermediate buffers
//! planned by liveness ([`plan`]), a [`CompiledModel`] that holds the kernels and the
//! plan, the [`Executable`] it becomes on a device, and the one path that compiles,
//! loads, runs, checks and times a model ([`measure`]).

pub mod ahead;
pub mod anchor;
pub mod beside;
pub mod bound_rows;
pub mod buckets;
pub mod compiled;
pub mod error;
pub mod executable;
pub mod generate;
pub mod guard;
pub mod horizontal;
pub mod lower;
pub mod measure;
pub mod pdl;
pub mod plan;
pub mod symbolic;
pub mod tune;

pub use compiled::{
    CompileOptions, CompiledModel, GATED_STORE_ENV, GEMV_KMAJOR_ENV, PREFETCH_ENV, SYMBOL_BOUND,
};
pub use error::{LowerError, ModelError};
pub use executable::{Executable, IoTensor, LoadedGroup};
pub use generate::{Generation, Generator};
pub use lower::attention::DECODE_UNFUSED;

/// The examples of `docs/architecture.md` ("Adding an ONNX op", "Adding a benchmark
/// workload", "Adding a graph pass"), compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../docs/architecture.md")]
pub struct ArchitectureExamples;
