//! The interpreter's errors: every one names the kernel, and those raised while running
//! name the buffer, the flat index and the thread (block and thread indices) concerned.

use std::fmt;

use crate::dtype::DType;
use crate::kernel::Access;

/// One thread of a launch: its block index and its thread index, `(x, y, z)` each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ThreadId {
    pub block: [u32; 3],
    pub thread: [u32; 3],
}

impl fmt::Display for ThreadId {
    /// `block (0, 1, 0) thread (5, 0, 0)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [bx, by, bz] = self.block;
        let [tx, ty, tz] = self.thread;
        write!(f, "block ({bx}, {by}, {bz}) thread ({tx}, {ty}, {tz})")
    }
}

/// A memory access, as named in race reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemOp {
    Read,
    Write,
}

impl fmt::Display for MemOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemOp::Read => "read",
            MemOp::Write => "written",
        })
    }
}

/// Why the interpreter refused or stopped a program.
///
/// Argument errors come from [`super::run`] before anything runs; compile errors
/// (`UnloweredMapping`, `UnboundVar`, `TypeMismatch`, ...) before a kernel's first block;
/// the others stop the kernel at the faulting access. On an error the buffers hold what
/// the kernels before the failing one wrote.
#[derive(Debug, thiserror::Error)]
pub enum InterpError {
    #[error("`{func}` takes {expected} arguments, got {got}")]
    ArgCount {
        func: String,
        expected: usize,
        got: usize,
    },
    #[error("argument `{param}`: expected a {expected}, got a {got}")]
    ArgKind {
        param: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("argument `{param}`: expected dtype {expected}, got {got}")]
    ArgDType {
        param: String,
        expected: DType,
        got: DType,
    },
    #[error("argument `{param}`: expected {expected} elements, got {got}")]
    ArgLen {
        param: String,
        expected: i64,
        got: usize,
    },
    #[error("kernel `{kernel}`: no data given for buffer `{buffer}`")]
    MissingBuffer { kernel: String, buffer: String },
    #[error("kernel `{kernel}`: no value given for scalar parameter `{var}`")]
    MissingScalar { kernel: String, var: String },
    #[error("kernel `{kernel}`: buffer `{buffer}` has no valid size (shape {shape:?})")]
    BadShape {
        kernel: String,
        buffer: String,
        shape: Vec<i64>,
    },
    #[error(
        "kernel `{kernel}`: {op} of `{buffer}`[{index}..{}] out of bounds (length {len}) at {at}",
        *index + *lanes as i64
    )]
    OutOfBounds {
        kernel: String,
        buffer: String,
        op: MemOp,
        index: i64,
        lanes: u32,
        len: usize,
        at: ThreadId,
    },
    #[error(
        "kernel `{kernel}`: vector access of {lanes} lanes to `{buffer}` at index {index}, \
         not a multiple of {lanes}, at {at}"
    )]
    Misaligned {
        kernel: String,
        buffer: String,
        index: i64,
        lanes: u32,
        at: ThreadId,
    },
    #[error(
        "kernel `{kernel}`: shared-memory race on `{buffer}`[{index}]: {first} by {other} and \
         {second} by {at} with no barrier between"
    )]
    SharedRace {
        kernel: String,
        buffer: String,
        index: i64,
        first: MemOp,
        second: MemOp,
        other: ThreadId,
        at: ThreadId,
    },
    #[error(
        "kernel `{kernel}`: global-memory race on `{buffer}`[{index}]: {first} by {other} and \
         {second} by {at} in one launch, unordered"
    )]
    GlobalRace {
        kernel: String,
        buffer: String,
        index: i64,
        first: MemOp,
        second: MemOp,
        other: ThreadId,
        at: ThreadId,
    },
    #[error(
        "kernel `{kernel}`: barrier in divergent control flow: {active} of {total} threads \
         of the block reach it (first: {at})"
    )]
    DivergentBarrier {
        kernel: String,
        active: usize,
        total: usize,
        at: ThreadId,
    },
    #[error("kernel `{kernel}`: integer division by zero at {at}")]
    DivisionByZero { kernel: String, at: ThreadId },
    #[error("kernel `{kernel}`: task mapping `{mapping}` was not expanded (run mapping::expand)")]
    UnloweredMapping { kernel: String, mapping: String },
    #[error("kernel `{kernel}`: variable `{var}` is not bound")]
    UnboundVar { kernel: String, var: String },
    #[error(
        "kernel `{kernel}`: buffer `{buffer}` is neither a parameter nor a shared or local \
         allocation"
    )]
    UnknownBuffer { kernel: String, buffer: String },
    #[error("kernel `{kernel}`: buffer `{buffer}` is declared {access:?} but is {op}")]
    AccessViolation {
        kernel: String,
        buffer: String,
        access: Access,
        op: MemOp,
    },
    #[error("kernel `{kernel}`: type mismatch in `{expr}`: {detail}")]
    TypeMismatch {
        kernel: String,
        expr: String,
        detail: String,
    },
    #[error("kernel `{kernel}`: not supported by the interpreter: {detail}")]
    Unsupported { kernel: String, detail: String },
    /// A broken invariant of the interpreter itself (a bug here, not in the kernel).
    #[error("kernel `{kernel}`: interpreter bug: {detail}")]
    Internal { kernel: String, detail: String },
}
