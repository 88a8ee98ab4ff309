//! Typed schedule errors. Each names the block and loop it concerns.

use thiserror::Error;

use crate::expr::ThreadAxis;

/// Why a schedule primitive refused to apply. The Func is unchanged when a primitive
/// returns an error.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ScheduleError {
    #[error("no block named `{name}`; blocks are: {available}")]
    NoSuchBlock { name: String, available: String },
    #[error("block `{block}` no longer exists (it was inlined)")]
    StaleBlock { block: String },
    #[error("loop `{loop_}` no longer exists (it was split, fused or removed)")]
    StaleLoop { loop_: String },
    #[error("{primitive}: handle {handle} does not belong to this schedule")]
    UnknownHandle {
        primitive: &'static str,
        handle: String,
    },

    #[error("split of loop `{loop_}`: {msg}")]
    SplitFactors { loop_: String, msg: String },
    #[error(
        "split of loop `{loop_}` (extent {extent}): factors {factors} multiply to {product}, which does not cover the extent"
    )]
    SplitNotCovering {
        loop_: String,
        extent: i64,
        factors: String,
        product: i64,
    },
    #[error(
        "fuse: loops `{outer}` and `{inner}` are not adjacent: `{inner}` must be the only statement in the body of `{outer}`"
    )]
    FuseNotAdjacent { outer: String, inner: String },
    #[error(
        "fuse: loop `{spatial}` feeds spatial variables and loop `{reduce}` reduce variables of block `{block}`; a fused loop would mix them and break the reduction's order"
    )]
    FuseMixesIterKinds {
        spatial: String,
        reduce: String,
        block: String,
    },
    #[error("{primitive}: loop `{loop_}` is {kind}; only serial loops can be {what}")]
    LoopKind {
        primitive: &'static str,
        loop_: String,
        kind: String,
        what: &'static str,
    },
    #[error("{primitive}: {msg}")]
    TooLarge {
        primitive: &'static str,
        msg: String,
    },
    #[error(
        "reorder: loops `{a}` and `{b}` are not in one loop nest (they belong to different blocks or branches)"
    )]
    ReorderNotOneNest { a: String, b: String },
    #[error(
        "reorder: the body of loop `{loop_}` holds more than one statement, so loops below it cannot be moved across it"
    )]
    ReorderNotPerfect { loop_: String },
    #[error("{primitive}: loop `{loop_}` is given twice")]
    DuplicateLoop {
        primitive: &'static str,
        loop_: String,
    },
    #[error(
        "bind: {axis} is already bound to loop `{other}` with extent {other_extent} in this kernel; loop `{loop_}` has extent {extent}"
    )]
    ThreadExtentMismatch {
        axis: ThreadAxis,
        loop_: String,
        extent: i64,
        other: String,
        other_extent: i64,
    },
    #[error(
        "bind: block `{block}` already uses loop `{other}`, bound to {axis}; binding loop `{loop_}` to {axis} too would run only the diagonal"
    )]
    AxisBoundTwice {
        axis: ThreadAxis,
        loop_: String,
        other: String,
        block: String,
    },
    #[error(
        "{primitive}: loop `{loop_}` feeds reduce variable `{var}` of block `{block}`; a reduction loop cannot be {what}"
    )]
    ReduceLoop {
        primitive: &'static str,
        loop_: String,
        block: String,
        var: String,
        what: &'static str,
    },
    #[error("cache_read: block `{block}` has no read buffer {index}; it reads {reads}")]
    NoSuchRead {
        block: String,
        index: usize,
        reads: String,
    },
    #[error("cache_write: block `{block}` has no write buffer {index}; it writes {writes}")]
    NoSuchWrite {
        block: String,
        index: usize,
        writes: String,
    },
    #[error("{primitive}: unknown storage scope `{scope}`; use global, shared or local")]
    BadScope {
        primitive: &'static str,
        scope: String,
    },
    #[error("{primitive}: block `{block}` {msg}")]
    BlockShape {
        primitive: &'static str,
        block: String,
        msg: String,
    },
    #[error(
        "compute_at: loop `{loop_}` does not enclose block `{consumer}`, which reads `{buffer}` written by block `{block}`"
    )]
    NotEnclosingConsumer {
        block: String,
        loop_: String,
        consumer: String,
        buffer: String,
    },
    #[error(
        "reverse_compute_at: loop `{loop_}` does not enclose block `{producer}`, which writes `{buffer}` read by block `{block}`"
    )]
    NotEnclosingProducer {
        block: String,
        loop_: String,
        producer: String,
        buffer: String,
    },
    #[error("{primitive}: loop `{loop_}` is inside block `{block}`'s own loop nest")]
    LoopInsideBlock {
        primitive: &'static str,
        block: String,
        loop_: String,
    },
    #[error(
        "compute_at: no block under loop `{loop_}` reads `{buffer}` (written by block `{block}`)"
    )]
    NoConsumer {
        block: String,
        loop_: String,
        buffer: String,
    },
    #[error("compute_inline: block `{block}` is a reduction; only spatial blocks can be inlined")]
    InlineReduction { block: String },
    #[error(
        "{primitive}: block `{block}` writes `{buffer}`, a parameter of the function; it cannot be inlined away"
    )]
    InlineOutput {
        primitive: &'static str,
        block: String,
        buffer: String,
    },
    #[error(
        "reverse_compute_inline: the producer `{producer}` of block `{block}` is a reduction; an epilogue cannot be applied to partial sums"
    )]
    ReverseInlineIntoReduction { block: String, producer: String },
    #[error("decompose_reduction: block `{block}` has no reduce variables (or no init)")]
    NotAReduction { block: String },
    #[error("{primitive}: loop `{loop_}` does not enclose block `{block}`")]
    LoopNotAncestor {
        primitive: &'static str,
        block: String,
        loop_: String,
    },
}
