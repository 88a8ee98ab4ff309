//! What can go wrong compiling or running a model, naming the node, the kernel or the
//! tensor at fault.

use thiserror::Error;
use weft_graph::GraphError;
use weft_runtime::DeviceError;

/// Why a group could not be lowered to a function.
#[derive(Debug, Error)]
pub enum LowerError {
    /// A kernel template refused what it was given (a config, a shape).
    #[error(transparent)]
    Template(#[from] weft_ir::template::TemplateError),
    /// Post-scheduling fusion refused a prologue or an epilogue.
    #[error(transparent)]
    Fusion(#[from] weft_ir::fusion::FusionError),
    /// A template's config could not be read.
    #[error(transparent)]
    Config(#[from] weft_kernels::BuildError),
    /// The narrow input's padded copy could not take its view.
    #[error("fusing the padded copy's view: {0}")]
    PaddedCopy(#[source] weft_ir::fusion::FusionError),
    /// The kernel library refused (its rule-based schedules, a product's config), in its
    /// words.
    #[error("{0}")]
    Kernels(String),
    /// The lowering does not take the group: what it lacks.
    #[error("{0}")]
    Refused(String),
}

/// An error of the model compiler or of a compiled model's run.
#[derive(Debug, Error)]
pub enum ModelError {
    /// The graph itself is wrong.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A group could not be lowered to a kernel.
    #[error("node `{node}` ({op}): {source}")]
    Lower {
        node: String,
        op: &'static str,
        #[source]
        source: Box<LowerError>,
    },
    /// Lowering a group's function to kernels failed.
    #[error("kernel `{kernel}`: {source}")]
    Kernel {
        kernel: String,
        #[source]
        source: weft_ir::lower::LowerError,
    },
    /// A weight the plan uploads holds no data (a graph built wrongly by hand).
    #[error("weight `{tensor}` holds no data")]
    WeightWithoutData { tensor: String },
    /// What the device gave back for a tensor does not fill its shape.
    #[error("tensor `{tensor}` as the device holds it: {source}")]
    Download {
        tensor: String,
        #[source]
        source: ndarray::ShapeError,
    },
    /// The device refused or failed.
    #[error("kernel `{kernel}`: {source}")]
    Device {
        kernel: String,
        #[source]
        source: DeviceError,
    },
    /// The device failed outside any one kernel (uploads, downloads, timing).
    #[error(transparent)]
    Run(#[from] DeviceError),
    /// The target cannot run the precision asked for.
    #[error("{0}")]
    Precision(String),
    /// Inputs of the wrong number or shape.
    #[error("input `{name}`: {what}")]
    Input { name: String, what: String },
}
