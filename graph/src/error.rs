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
    /// The graph has no output, or an output nothing computes.
    #[error("output `{0}` is never computed")]
    UncomputedOutput(String),
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
}
