//! What can go wrong reading or writing a model, each naming what and where.

use std::path::PathBuf;

use thiserror::Error;
use weft_graph::GraphError;

/// Why a model could not be imported.
#[derive(Debug, Error)]
pub enum ImportError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The bytes are not a protobuf `ModelProto` (truncated, empty, another format).
    #[error("not an ONNX model: {0}")]
    NotOnnx(String),
    /// A `ModelProto` without a graph.
    #[error("the model has no graph")]
    NoGraph,
    /// The model imports no opset of the default domain.
    #[error("the model imports no opset of the default ONNX domain")]
    NoOpset,
    /// The default domain's opset is outside what weft imports.
    #[error("opset {0} of the default domain is not supported: weft imports opsets 7 to 23")]
    Opset(i64),
    /// A node of a domain other than the default one.
    #[error(
        "node `{node}` ({op}) is in domain `{domain}`: weft imports only the default ONNX domain"
    )]
    Domain {
        node: String,
        op: String,
        domain: String,
    },
    /// An op weft does not import, or not at the version the model's opset picks.
    #[error("node `{node}`: op {op} is not supported at opset {opset}{}", .why.as_deref().map(|w| format!(" ({w})")).unwrap_or_default())]
    UnsupportedOp {
        op: String,
        node: String,
        opset: i64,
        why: Option<String>,
    },
    /// An attribute value weft does not implement, or an invalid one.
    #[error("node `{node}` ({op}): attribute `{attr}`: {what}")]
    Attribute {
        node: String,
        op: String,
        attr: String,
        what: String,
    },
    /// A decoder imported over KV caches (`ImportOptions::cache`) that is not in the form
    /// weft takes: what is missing or other.
    #[error("a decoder step over KV caches: {0}")]
    Cache(String),
    /// A node whose inputs or outputs weft cannot take (a computed shape, a used mask).
    #[error("node `{node}` ({op}): {what}")]
    Node {
        node: String,
        op: String,
        what: String,
    },
    /// A computed value (a graph input where `graph_input`) in an input an op needs at
    /// import: a shape, axes, a bound, a flag. A graph input there can be bound to a
    /// value with `ImportOptions::constants`.
    #[error(
        "node `{node}` ({op}): input {index} `{input}` must be a constant (an initializer or a Constant node's output): weft fixes shapes and bounds at import{}",
        if *.graph_input { "; it is a graph input: bind it to a value at import (ImportOptions::constants)" } else { "" }
    )]
    NotConstant {
        node: String,
        op: String,
        index: usize,
        input: String,
        graph_input: bool,
    },
    /// A node reads a value that no input, initializer or earlier node defines.
    #[error(
        "node `{node}` reads `{input}`, which no graph input, initializer or earlier node defines"
    )]
    Undefined { node: String, input: String },
    /// A tensor whose data is in another file, in a model given without its folder.
    #[error(
        "tensor `{0}` keeps its data in an external file, which weft reads only for a model loaded from its file (weft_onnx::load, or the command line)"
    )]
    ExternalData(String),
    /// A tensor's data that cannot be read (wrong length, element type weft does not hold).
    #[error("tensor `{tensor}`: {what}")]
    Tensor { tensor: String, what: String },
    /// A symbolic dimension of an input without a size.
    #[error(
        "input `{input}` dimension {index} is `{dim}`, which is not bound: give its size in ImportOptions::bindings (or ImportOptions::batch for a leading dimension)"
    )]
    UnboundDim {
        input: String,
        index: usize,
        dim: String,
    },
    /// A value `ImportOptions::constants` binds that is no graph input, or whose type or
    /// shape the input does not take.
    #[error("input `{input}` bound at import (ImportOptions::constants): {what}")]
    Constant { input: String, what: String },
    /// An input whose type or shape weft cannot take.
    #[error("input `{input}`: {what}")]
    Input { input: String, what: String },
    /// A shape the file states that differs from the one weft infers.
    #[error("tensor `{tensor}`: the model states shape {stated}, weft infers {inferred:?}")]
    ShapeMismatch {
        tensor: String,
        stated: String,
        inferred: Vec<usize>,
    },
    /// A graph output that nothing computes.
    #[error("graph output `{0}` is not computed by any node, input or initializer")]
    MissingOutput(String),
    /// weft's shape inference refused a node (wrong shapes, counts or dtypes).
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// Why a graph could not be exported.
#[derive(Debug, Error)]
pub enum ExportError {
    /// The file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A tensor whose element type ONNX export does not write.
    #[error("tensor `{tensor}`: {what}")]
    Tensor { tensor: String, what: String },
    /// The graph is not valid (see [`weft_graph::Graph::validate`]).
    #[error(transparent)]
    Graph(#[from] GraphError),
}
