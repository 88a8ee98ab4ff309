//! weft-ir: tensor expressions, the loop/task IR, schedule primitives, task mappings,
//! lowering to a backend-neutral [`kernel::Kernel`], printers and a race-checking CPU
//! interpreter.
//!
//! The data flow (DESIGN.md): a [`te`] definition becomes a default [`func::Func`];
//! a [`schedule::Schedule`] transforms it (every step recorded in a replayable trace);
//! [`lower::lower`] turns it into a [`kernel::LoweredFunc`], which emitters turn into
//! source and [`interp`] runs on the CPU.

pub mod arith;
pub mod bounds;
pub mod data;
pub mod dtype;
pub mod echo;
pub mod expr;
pub mod fragment;
pub mod func;
pub mod fusion;
pub mod interp;
pub mod kernel;
pub mod lower;
pub mod mapping;
pub mod printer;
pub mod schedule;
pub mod te;
pub mod template;
pub mod tma;

pub use echo::echo;

/// The names most programs need.
pub mod prelude {
    pub use crate::dtype::DType;
    pub use crate::expr::{Buffer, Expr, IterVar, Scope, ThreadAxis, Var};
    pub use crate::te::{self, TensorExt};
}
