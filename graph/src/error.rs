//! [`GraphError`]: what is wrong with a graph, naming the node (and input) at fault.

use thiserror::Error;

/// What is wrong with a graph, naming the node (and input) at fault.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum GraphError {
    /// An op cannot take its inputs: wrong count, shape or dtype.
    #[error("node `{node}` ({op}): {what}")]
    Shape {
        node: String,
        op: &'static str,
        what: String,
    },
    /// A name used twice.
    #[error("two tensors named `{0}`")]
    DuplicateName(String),
    /// A node reads a tensor nothing computes before it.
    #[error(
        "node `{node}` reads `{tensor}`, which is neither an input, a weight, nor computed before it"
    )]
    Undefined { node: String, tensor: String },
    /// A tensor id out of range (a graph built wrongly by hand).
    #[error("tensor #{0} does not exist")]
    NoTensor(usize),
    /// An output nothing computes.
    #[error("output `{0}` is never computed")]
    UncomputedOutput(String),
    /// The graph declares no output at all: nothing it computes would be kept.
    #[error("the graph declares no outputs (its `output` list is empty): nothing would be kept")]
    NoOutputs,
    /// A tensor with more elements than weft's i32 indices reach (or than a `usize`
    /// counts): refused before anything is allocated for it.
    #[error(
        "tensor `{tensor}` ({made_by}) has shape {shape:?}: {elements} elements; weft indexes tensors with i32, so at most 2147483647"
    )]
    TooLarge {
        tensor: String,
        /// `an input of the graph`, `a weight`, or `output of node `N` (Op)`.
        made_by: String,
        shape: Vec<usize>,
        /// The element count, in words (it may not fit any integer type).
        elements: String,
    },
    /// An input or computed tensor with a dimension of 0: no kernel computes it.
    #[error(
        "tensor `{tensor}` ({made_by}) has shape {shape:?}, with no elements: weft computes no empty tensors"
    )]
    Empty {
        tensor: String,
        made_by: String,
        shape: Vec<usize>,
    },
    /// An index outside ONNX's range `[-n, n)` (an error in ONNX, which weft never
    /// clamps): in a constant, a graph input or a value the reference computed.
    #[error(
        "node `{node}` ({op}): element {element} of the indices `{indices}` is {value}, out of range for {rows} rows: ONNX allows -{rows} to {} and makes any other index an error",
        *rows as i64 - 1
    )]
    IndexOutOfRange {
        node: String,
        op: &'static str,
        /// The tensor holding the indices.
        indices: String,
        /// The element's position in it, row-major.
        element: usize,
        value: f64,
        rows: usize,
    },
    /// Reference evaluation was given inputs of the wrong number or shape.
    #[error("input `{name}`: {what}")]
    Input { name: String, what: String },
    /// A pass named that does not exist (`--disable-pass`).
    #[error("no pass is called `{key}`; the passes are {known}")]
    UnknownPass {
        key: String,
        /// The keys of the passes that may be left out, in order.
        known: String,
    },
    /// A pass named that a compile cannot do without (storage types and layouts).
    #[error("the pass `{key}` cannot be left out: it chooses how tensors are stored")]
    FixedPass { key: String },
    /// A node that mixes values across a symbolic dimension in a way weft cannot bound
    /// to the run's length, or a symbol declared wrongly: refused, never run at the wrong
    /// length.
    #[error("node `{node}` ({op}): symbolic dimension `{symbol}`: {what}")]
    Symbolic {
        node: String,
        op: &'static str,
        symbol: String,
        what: String,
    },
}
