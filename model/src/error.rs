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
    /// A generation was asked for what its compiled steps cannot give (more tokens than
    /// the cache holds, a prompt of another length or batch).
    #[error("generate: {0}")]
    Generate(String),
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
    /// A run computed an index out of ONNX's range `[-n, n)` (an error in ONNX): the
    /// device's guard on the node saw it ([`crate::guard`]), and the run's outputs,
    /// computed with the index clamped, are refused.
    #[error(
        "node `{node}` ({op}): the run computed an index in `{indices}` out of range for {}: ONNX makes it an error, and weft refuses the outputs rather than clamp it",
        rows_text(.rows)
    )]
    IndexOutOfRange {
        node: String,
        op: &'static str,
        indices: String,
        rows: Vec<usize>,
    },
    /// The buffer plan needs more memory than the device has available (checked before
    /// anything is allocated).
    #[error(
        "the model needs {} on {device}, which has {} available{}: {}",
        bytes_text(.need.bytes),
        bytes_text(*.available),
        if *.forced { " (as WEFT_DEVICE_MEMORY says)" } else { "" },
        need_text(.need)
    )]
    TooLargeForDevice {
        need: MemoryNeed,
        device: String,
        available: u64,
        /// The figure came from `WEFT_DEVICE_MEMORY`, not from the device.
        forced: bool,
    },
    /// A run of a model with symbolic dimensions asked for a length outside a symbol's
    /// range, named no symbol of the model, or gave inputs of another length.
    #[error("symbolic dimension `{symbol}`: {what}")]
    Symbolic { symbol: String, what: String },
    /// `WEFT_DEVICE_MEMORY` holds something other than a number of bytes.
    #[error("WEFT_DEVICE_MEMORY=`{0}` is not a whole number of bytes")]
    MemoryOverride(String),
    /// A switch read from the environment (`WEFT_SKINNY_PROLOGUE`) holds something other
    /// than `0` or `1`.
    #[error("{variable}=`{value}`: 0 (off) or 1 (on)")]
    Switch { variable: String, value: String },
    /// A setting read from the environment (`WEFT_PREFETCH`) holds none of its values.
    #[error("{variable}=`{value}`: one of {values}")]
    Setting {
        variable: String,
        value: String,
        values: String,
    },
}

/// What a model needs of a device's memory, as a refusal states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryNeed {
    /// The plan's peak: weights, inputs, outputs and the reused intermediates.
    pub bytes: u64,
    pub weights: u64,
    /// Graph inputs and outputs.
    pub io: u64,
    pub intermediates: u64,
    /// The largest tensors, largest first: name, bytes, what it is.
    pub largest: Vec<(String, u64, &'static str)>,
}

/// `1.5 GiB`, `12.0 MiB`, `512 B`.
pub fn bytes_text(b: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = b as f64;
    if f >= KIB * KIB * KIB {
        format!("{:.1} GiB", f / (KIB * KIB * KIB))
    } else if f >= KIB * KIB {
        format!("{:.1} MiB", f / (KIB * KIB))
    } else if f >= KIB {
        format!("{:.1} KiB", f / KIB)
    } else {
        format!("{b} B")
    }
}

/// The need in words: its parts and the largest tensors.
fn need_text(n: &MemoryNeed) -> String {
    let largest: Vec<String> = n
        .largest
        .iter()
        .map(|(name, b, what)| format!("`{name}` {} ({what})", bytes_text(*b)))
        .collect();
    format!(
        "{} of weights, {} of inputs and outputs, {} of intermediates; the largest tensors: {}",
        bytes_text(n.weights),
        bytes_text(n.io),
        bytes_text(n.intermediates),
        largest.join(", ")
    )
}

/// `3 rows (-3 to 2)`, or per position of the last axis for index tuples.
fn rows_text(rows: &[usize]) -> String {
    match rows {
        [n] => format!("{n} rows (ONNX allows -{n} to {})", *n as i64 - 1),
        tuples => {
            format!("the dimensions {tuples:?} (position j of the last axis indexes dimension j)")
        }
    }
}

impl ModelError {
    /// True for a failure of the run itself, not of what was asked (an index the model
    /// computed out of range): the CLI's exit status 1.
    pub fn is_run_failure(&self) -> bool {
        matches!(self, ModelError::IndexOutOfRange { .. })
    }
}
