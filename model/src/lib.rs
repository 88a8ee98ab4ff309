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

pub use compiled::{CompileOptions, CompiledModel, Loaded};
