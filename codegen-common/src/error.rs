//! The emitters' error type: every way a [`Kernel`](weft_ir::kernel::Kernel) can be
//! refused, each naming the kernel and the node, allocation or axis at fault.

use std::fmt;

use crate::limits::LimitError;

/// Why an emitter refused a kernel. Emitters never write a shader they know to be invalid:
/// every refusal is one of these.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// The kernel still holds a node that lowering must remove (see the contract in
    /// `weft_ir::kernel`).
    #[error("kernel `{kernel}`: {node} must be removed by lowering before emission: {detail}")]
    Unlowered {
        kernel: String,
        node: UnloweredNode,
        /// The node as the IR printer writes it (a mapping's header, an expression).
        detail: String,
    },
    /// The kernel exceeds a limit of the target (shared memory, threads, grid, f16).
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A construct the backend cannot express (a `bool` storage buffer in WGSL, a vector
    /// width with no vector type, ...).
    #[error("kernel `{kernel}`: the {backend} emitter does not support {what}")]
    Unsupported {
        kernel: String,
        backend: &'static str,
        what: String,
    },
    /// The kernel breaks the contract of `weft_ir::kernel` in a way that is not a missing
    /// lowering step (a buffer that is neither a parameter nor an allocation, a variable
    /// used outside its scope, an integer literal out of its type's range, ...).
    #[error("kernel `{kernel}` is malformed: {what}")]
    Invalid { kernel: String, what: String },
    /// An emitter's switch read from the environment (`WEFT_VK_CONV`) holds something
    /// it does not take (`allowed` says what it takes).
    #[error("kernel `{kernel}`: {variable}=`{value}`: {allowed}")]
    Switch {
        kernel: String,
        variable: &'static str,
        value: String,
        allowed: &'static str,
    },
}

/// The kinds of node lowering must remove before a kernel reaches an emitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnloweredNode {
    /// `KStmt::Mapping`: a task-mapping loop that was not expanded into loops.
    TaskMapping,
    /// `Expr::Reduce`: a te reduction that was not turned into a block with an init.
    Reduce,
    /// `BinOp::FloorDiv`: lowering writes `Div` on non-negative operands or a floor form.
    FloorDiv,
    /// `BinOp::FloorMod`: as `FloorDiv`.
    FloorMod,
    /// An `Expr::Load` with other than one (flat) index.
    MultiIndexLoad,
}

impl fmt::Display for UnloweredNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnloweredNode::TaskMapping => "a task-mapping loop (KStmt::Mapping)",
            UnloweredNode::Reduce => "a reduction (Expr::Reduce)",
            UnloweredNode::FloorDiv => "a floor division (BinOp::FloorDiv)",
            UnloweredNode::FloorMod => "a floor modulo (BinOp::FloorMod)",
            UnloweredNode::MultiIndexLoad => "a multi-dimensional load",
        })
    }
}

impl EmitError {
    /// The name of the kernel the error is about.
    pub fn kernel(&self) -> &str {
        match self {
            EmitError::Unlowered { kernel, .. }
            | EmitError::Unsupported { kernel, .. }
            | EmitError::Invalid { kernel, .. }
            | EmitError::Switch { kernel, .. } => kernel,
            EmitError::Limit(l) => l.kernel(),
        }
    }
}
