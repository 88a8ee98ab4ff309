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
    /// [`super::run`] was given the wrong number of arguments.
    #[error("`{func}` takes {expected} arguments, got {got}")]
    ArgCount {
        func: String,
        expected: usize,
        got: usize,
    },
    /// A tensor where a scalar parameter is, or the reverse.
    #[error("argument `{param}`: expected a {expected}, got a {got}")]
    ArgKind {
        param: String,
        expected: &'static str,
        got: &'static str,
    },
    /// Tensor data or a scalar of another dtype than its parameter (bool buffers take
    /// `u32` data).
    #[error("argument `{param}`: expected dtype {expected}, got {got}")]
    ArgDType {
        param: String,
        expected: DType,
        got: DType,
    },
    /// Tensor data whose length is not the buffer's element count.
    #[error("argument `{param}`: expected {expected} elements, got {got}")]
    ArgLen {
        param: String,
        expected: i64,
        got: usize,
    },
    /// [`super::run_kernel`] was not given a kernel buffer parameter.
    #[error("kernel `{kernel}`: no data given for buffer `{buffer}`")]
    MissingBuffer { kernel: String, buffer: String },
    /// [`super::run_kernel`] was not given a kernel scalar parameter.
    #[error("kernel `{kernel}`: no value given for scalar parameter `{var}`")]
    MissingScalar { kernel: String, var: String },
    /// A buffer with a non-positive extent or too many elements.
    #[error("kernel `{kernel}`: buffer `{buffer}` has no valid size (shape {shape:?})")]
    BadShape {
        kernel: String,
        buffer: String,
        shape: Vec<i64>,
    },
    /// A load or store of elements `index .. index + lanes` outside `0 .. len`.
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
    /// Hopper's asynchronous operations out of order: a `wgmma` with no fence before it,
    /// its accumulator or operand tile touched before a `wgmma.wait_group` retired it, a
    /// TMA copy's box read before its mbarrier phase was waited for, an mbarrier wait
    /// that can never return.
    #[error("kernel `{kernel}`: {what}, at {at}")]
    AsyncOrder {
        kernel: String,
        what: String,
        at: ThreadId,
    },
    /// A shared overlay and its hosts ([`crate::expr::Buffer::overlay`]) used against
    /// their contract: both sides touched with no barrier between, or a side read after
    /// the other side wrote the bytes they share.
    #[error("kernel `{kernel}`: `{buffer}` {what}, at {at}")]
    Overlay {
        kernel: String,
        buffer: String,
        what: String,
        at: ThreadId,
    },
    /// A vector access whose first index is not a multiple of its width.
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
    /// Two threads of a block touched one shared element, at least one writing, with no
    /// barrier between: `first` by `other`, then `second` by `at`.
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
    /// Two threads touched one global element in one launch, at least one writing,
    /// from different blocks or with no barrier between: `first` by `other`, then
    /// `second` by `at`.
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
    /// A barrier reached by some but not all threads of a block.
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
    /// A subgroup shuffle whose partner thread does not take part: past the block's
    /// threads, or not arriving (the shuffle under a condition that differs between them).
    #[error(
        "kernel `{kernel}`: shuffle_xor with mask {mask} at {at}: its partner, thread \
         {partner} of the block, {why}; a shuffle is a subgroup collective"
    )]
    DivergentShuffle {
        kernel: String,
        mask: u32,
        partner: usize,
        why: &'static str,
        at: ThreadId,
    },
    /// A matrix-fragment operation reached by some but not all threads of a warp.
    #[error(
        "kernel `{kernel}`: fragment operation on `{fragment}` in divergent control flow: \
         {active} of 32 threads of the warp reach it (first: {at}); fragment operations are \
         warp-wide"
    )]
    DivergentFragment {
        kernel: String,
        fragment: String,
        active: usize,
        at: ThreadId,
    },
    /// A matrix-fragment operation whose arguments differ between threads of a warp.
    #[error(
        "kernel `{kernel}`: fragment operation on `{fragment}`: its {what} differs across the \
         warp ({first} at the warp's first thread, {second} at {at}); a warp's threads must \
         agree on it"
    )]
    NonUniformFragment {
        kernel: String,
        fragment: String,
        what: &'static str,
        first: i32,
        second: i32,
        at: ThreadId,
    },
    /// A tile index outside a fragment array.
    #[error(
        "kernel `{kernel}`: fragment `{fragment}`[{index}] out of bounds (count {count}) at {at}"
    )]
    FragmentIndex {
        kernel: String,
        fragment: String,
        index: i64,
        count: u32,
        at: ThreadId,
    },
    /// Integer `/` or `%` (truncating or floor) by zero.
    #[error("kernel `{kernel}`: integer division by zero at {at}")]
    DivisionByZero { kernel: String, at: ThreadId },
    /// A [`crate::kernel::KStmt::Mapping`] reached the interpreter.
    #[error(
        "kernel `{kernel}`: task mapping `{mapping}` was not expanded (run weft_ir::lower::mapping::expand)"
    )]
    UnloweredMapping { kernel: String, mapping: String },
    /// A variable that no loop, `let` or scalar parameter binds.
    #[error("kernel `{kernel}`: variable `{var}` is not bound")]
    UnboundVar { kernel: String, var: String },
    /// A buffer that is not a parameter or allocation of the kernel.
    #[error(
        "kernel `{kernel}`: buffer `{buffer}` is neither a parameter nor a shared or local \
         allocation"
    )]
    UnknownBuffer { kernel: String, buffer: String },
    /// A store to a `Read` parameter or a load from a `Write` one.
    #[error("kernel `{kernel}`: buffer `{buffer}` is declared {access:?} but is {op}")]
    AccessViolation {
        kernel: String,
        buffer: String,
        access: Access,
        op: MemOp,
    },
    /// An ill-typed expression or statement.
    #[error("kernel `{kernel}`: type mismatch in `{expr}`: {detail}")]
    TypeMismatch {
        kernel: String,
        expr: String,
        detail: String,
    },
    /// Something the lowered-kernel contract excludes (a vector load outside a copy,
    /// a multi-dimensional index, a te reduction) or a launch too large to interpret.
    #[error("kernel `{kernel}`: not supported by the interpreter: {detail}")]
    Unsupported { kernel: String, detail: String },
    /// A broken invariant of the interpreter itself (a bug here, not in the kernel).
    #[error("kernel `{kernel}`: interpreter bug: {detail}")]
    Internal { kernel: String, detail: String },
}
