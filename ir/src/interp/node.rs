//! The id of a node of a compiled program, shared by the compiler ([`super::compile`]),
//! the compiled fragment operations ([`super::fragment`]) and the executor.

/// An index into [`Program::nodes`](super::compile::Program::nodes).
pub(super) type NodeId = u32;
