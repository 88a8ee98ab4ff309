//! Every schedule error kind, each from a small program, and the rule that a failed
//! primitive leaves the Func unchanged.

use ThreadAxis::*;
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};

/// `C[i, j] = sum_k A[i, k] * B[k, j]` with `D[i, j] = C[i, j] * 2` after it.
fn matmul_epilogue(n: i64) -> Schedule {
    let a = te::placeholder("A", &[n, n], DType::F32);
    let b = te::placeholder("B", &[n, n], DType::F32);
    let k = te::reduce_axis("k", n);
    let c = te::compute("C", &[("i", n), ("j", n)], |i| {
        te::sum(
            a.at(&[i[0].clone(), k.expr()]) * b.at(&[k.expr(), i[1].clone()]),
            &[&k],
        )
    });
    let d = te::compute("D", &[("i", n), ("j", n)], |i| {
        c.at(&[&i[0], &i[1]]) * 2.0f32
    });
    Schedule::new(te::create_func("mm", [&a, &b, &d]).unwrap())
}

/// `B[i] = A[i] + 1` then `C[i] = B[i] * 2`.
fn chain(n: i64) -> Schedule {
    let a = te::placeholder("A", &[n], DType::F32);
    let b = te::compute("B", &[("i", n)], |i| a.at(&[&i[0]]) + 1.0f32);
    let c = te::compute("C", &[("i", n)], |i| b.at(&[&i[0]]) * 2.0f32);
    Schedule::new(te::create_func("chain", [&a, &c]).unwrap())
}

/// Runs the primitive `f`, expects an error, and checks that neither the Func nor the
/// trace changed.
fn fails<T: std::fmt::Debug>(
    s: &mut Schedule,
    f: impl FnOnce(&mut Schedule) -> Result<T, ScheduleError>,
) -> ScheduleError {
    let before = s.func().to_string();
    let trace_before = s.trace().to_string();
    let e = f(s).expect_err("expected an error");
    assert_eq!(
        s.func().to_string(),
        before,
        "a failed primitive changed the Func"
    );
    assert_eq!(
        s.trace().to_string(),
        trace_before,
        "a failed primitive was traced"
    );
    e
}

#[test]
fn split_factors_that_do_not_cover_the_extent() {
    let mut s = chain(100);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    let l = s.get_loops(b).unwrap();
    let e = fails(s, |s| s.split(l[0], &[Some(8), Some(8)]));
    assert!(
        matches!(
            e,
            ScheduleError::SplitNotCovering {
                extent: 100,
                product: 64,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("loop `i`"), "{e}");
}

#[test]
fn split_factor_zero() {
    let mut s = chain(100);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    let l = s.get_loops(b).unwrap();
    let e = fails(s, |s| s.split(l[0], &[None, Some(0)]));
    assert!(matches!(e, ScheduleError::SplitFactors { .. }), "{e}");
    assert!(e.to_string().contains("not positive"), "{e}");
}

#[test]
fn split_two_inferred_factors() {
    let mut s = chain(100);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    let l = s.get_loops(b).unwrap();
    let e = fails(s, |s| s.split(l[0], &[None, None]));
    assert!(matches!(e, ScheduleError::SplitFactors { .. }), "{e}");
}

#[test]
fn non_divisible_split_gives_a_predicate() {
    let mut s = chain(100);
    let b = s.get_block("B").unwrap();
    let l = s.get_loops(b).unwrap();
    s.split(l[0], &[None, Some(32)]).unwrap();
    let text = s.func().to_string();
    assert!(text.contains("T.where(i_0 * 32 + i_1 < 100)"), "{text}");
}

#[test]
fn fuse_of_non_adjacent_loops() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let l = s.get_loops(c).unwrap();
    let e = fails(s, |s| s.fuse(&[l[0], l[2]]));
    assert!(matches!(e, ScheduleError::FuseNotAdjacent { .. }), "{e}");
    assert!(
        e.to_string().contains("`i`") && e.to_string().contains("`k`"),
        "{e}"
    );
}

#[test]
fn reorder_of_loops_from_different_blocks() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let d = s.get_block("D").unwrap();
    let lc = s.get_loops(c).unwrap();
    let ld = s.get_loops(d).unwrap();
    let e = fails(s, |s| s.reorder(&[lc[1], ld[0]]));
    assert!(matches!(e, ScheduleError::ReorderNotOneNest { .. }), "{e}");
}

#[test]
fn reorder_across_a_loop_with_two_statements() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let cl = s.cache_write(c, 0, "local").unwrap();
    let l = s.get_loops(c).unwrap();
    s.reverse_compute_at(cl, l[0]).unwrap();
    let l = s.get_loops(c).unwrap();
    let li = s.get_loops(cl).unwrap();
    let e = fails(s, |s| s.reorder(&[li[1], l[0]]));
    assert!(matches!(e, ScheduleError::ReorderNotPerfect { .. }), "{e}");
}

#[test]
fn duplicate_loop() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let l = s.get_loops(c).unwrap();
    let e = fails(s, |s| s.reorder(&[l[0], l[0]]));
    assert!(matches!(e, ScheduleError::DuplicateLoop { .. }), "{e}");
}

#[test]
fn one_thread_axis_with_two_extents_in_one_kernel() {
    let mut s = matmul_epilogue(64);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let l = s.get_loops(c).unwrap();
    let i = s.split(l[0], &[None, Some(16)]).unwrap();
    let j = s.split(l[1], &[None, Some(8)]).unwrap();
    s.bind(i[1], ThreadIdxX).unwrap();
    let e = fails(s, |s| s.bind(j[1], ThreadIdxX));
    assert!(
        matches!(
            e,
            ScheduleError::ThreadExtentMismatch {
                axis: ThreadIdxX,
                extent: 8,
                other_extent: 16,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn one_block_on_two_loops_of_the_same_axis() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let l = s.get_loops(c).unwrap();
    s.bind(l[0], ThreadIdxX).unwrap();
    let e = fails(s, |s| s.bind(l[1], ThreadIdxX));
    assert!(matches!(e, ScheduleError::AxisBoundTwice { .. }), "{e}");
}

#[test]
fn bind_of_a_reduction_loop() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let l = s.get_loops(c).unwrap();
    let e = fails(s, |s| s.bind(l[2], ThreadIdxX));
    assert!(
        matches!(
            e,
            ScheduleError::ReduceLoop {
                primitive: "bind",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn bind_of_a_bound_loop() {
    let mut s = chain(16);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    let l = s.get_loops(b).unwrap();
    s.bind(l[0], ThreadIdxX).unwrap();
    let e = fails(s, |s| s.bind(l[0], BlockIdxX));
    assert!(
        matches!(
            e,
            ScheduleError::LoopKind {
                primitive: "bind",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn bind_beyond_1024_threads() {
    let mut s = chain(4096);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    let l = s.get_loops(b).unwrap();
    let e = fails(s, |s| s.bind(l[0], ThreadIdxX));
    assert!(matches!(e, ScheduleError::TooLarge { .. }), "{e}");
}

#[test]
fn compute_at_to_a_loop_that_does_not_enclose_the_consumer() {
    let mut s = chain(64);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    let c = s.get_block("C").unwrap();
    let lc = s.get_loops(c).unwrap();
    // A_shared feeds B, whose nest is not under C's loop.
    let a_sh = s.cache_read(b, 0, "shared").unwrap();
    let e = fails(s, |s| s.compute_at(a_sh, lc[0]));
    assert!(
        matches!(e, ScheduleError::NotEnclosingConsumer { .. }),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("loop `i`") && msg.contains("block `B`"),
        "{msg}"
    );
}

#[test]
fn compute_at_where_a_consumer_is_elsewhere() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let d = s.get_block("D").unwrap();
    let ld = s.get_loops(d).unwrap();
    let a_sh = s.cache_read(c, 0, "shared").unwrap();
    let e = fails(s, |s| // A_shared's consumer is C, not under D's loop.
        s.compute_at(a_sh, ld[0]));
    assert!(
        matches!(e, ScheduleError::NotEnclosingConsumer { .. }),
        "{e}"
    );
    let msg = e.to_string();
    assert!(msg.contains("A_shared") && msg.contains("`C`"), "{msg}");
}

#[test]
fn compute_at_into_its_own_nest() {
    let mut s = chain(16);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    let l = s.get_loops(b).unwrap();
    let e = fails(s, |s| s.compute_at(b, l[0]));
    assert!(matches!(e, ScheduleError::LoopInsideBlock { .. }), "{e}");
}

#[test]
fn reverse_compute_at_where_a_producer_is_elsewhere() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let d = s.get_block("D").unwrap();
    let lc = s.get_loops(c).unwrap();
    let i = s.split(lc[0], &[None, Some(4)]).unwrap();
    let _ = i;
    // D reads C, written by the whole of C's nest; a loop of another nest fails.
    let a_sh = s.cache_read(c, 0, "shared").unwrap();
    let la = s.get_loops(a_sh).unwrap();
    let e = fails(s, |s| s.reverse_compute_at(d, la[0]));
    assert!(
        matches!(
            e,
            ScheduleError::NotEnclosingProducer { .. } | ScheduleError::BlockShape { .. }
        ),
        "{e}"
    );
}

#[test]
fn cache_read_of_a_buffer_the_block_does_not_read() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let e = fails(s, |s| s.cache_read(c, 2, "shared"));
    assert!(
        matches!(e, ScheduleError::NoSuchRead { index: 2, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("0: A, 1: B"), "{e}");
}

#[test]
fn cache_write_of_a_missing_output() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let e = fails(s, |s| s.cache_write(c, 1, "local"));
    assert!(matches!(e, ScheduleError::NoSuchWrite { .. }), "{e}");
}

#[test]
fn unknown_scope() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let e = fails(s, |s| s.cache_read(c, 0, "texture"));
    assert!(matches!(e, ScheduleError::BadScope { .. }), "{e}");
}

#[test]
fn vectorize_of_a_reduce_loop() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let l = s.get_loops(c).unwrap();
    let e = fails(s, |s| s.vectorize(l[2]));
    assert!(
        matches!(
            e,
            ScheduleError::ReduceLoop {
                primitive: "vectorize",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("block `C`"), "{e}");
}

#[test]
fn compute_inline_of_a_reduction_block() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let e = fails(s, |s| s.compute_inline(c));
    assert!(matches!(e, ScheduleError::InlineReduction { .. }), "{e}");
}

#[test]
fn compute_inline_of_an_output() {
    let mut s = chain(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let e = fails(s, |s| s.compute_inline(c));
    assert!(matches!(e, ScheduleError::InlineOutput { .. }), "{e}");
}

#[test]
fn reverse_compute_at_of_a_reduction() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let d = s.get_block("D").unwrap();
    let ld = s.get_loops(d).unwrap();
    let e = fails(s, |s| s.reverse_compute_at(c, ld[0]));
    assert!(matches!(e, ScheduleError::BlockShape { .. }), "{e}");
    assert!(e.to_string().contains("reduction"), "{e}");
}

#[test]
fn reverse_compute_inline_into_a_reduction() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let d = s.get_block("D").unwrap();
    let e = fails(s, |s| s.reverse_compute_inline(d));
    assert!(
        matches!(e, ScheduleError::ReverseInlineIntoReduction { .. }),
        "{e}"
    );
}

#[test]
fn decompose_reduction_of_a_block_without_reduce_vars() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let d = s.get_block("D").unwrap();
    let l = s.get_loops(d).unwrap();
    let e = fails(s, |s| s.decompose_reduction(d, l[0]));
    assert!(matches!(e, ScheduleError::NotAReduction { .. }), "{e}");
}

#[test]
fn decompose_reduction_at_a_loop_of_another_nest() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let d = s.get_block("D").unwrap();
    let ld = s.get_loops(d).unwrap();
    let e = fails(s, |s| s.decompose_reduction(c, ld[0]));
    assert!(matches!(e, ScheduleError::LoopNotAncestor { .. }), "{e}");
}

#[test]
fn unknown_block() {
    let mut s = chain(16);
    let s = &mut s;
    let e = fails(s, |s| s.get_block("nope"));
    assert!(matches!(e, ScheduleError::NoSuchBlock { .. }), "{e}");
    assert!(e.to_string().contains("B, C"), "{e}");
}

#[test]
fn stale_loop_after_split() {
    let mut s = chain(16);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    let l = s.get_loops(b).unwrap();
    s.split(l[0], &[None, Some(4)]).unwrap();
    let e = fails(s, |s| s.unroll(l[0]));
    assert!(matches!(e, ScheduleError::StaleLoop { .. }), "{e}");
}

#[test]
fn stale_block_after_inline() {
    let mut s = chain(16);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    s.compute_inline(b).unwrap();
    let e = fails(s, |s| s.get_loops(b));
    assert!(matches!(e, ScheduleError::StaleBlock { .. }), "{e}");
}

#[test]
fn compute_at_without_consumer_under_the_loop() {
    // A_shared is consumed by C; move it under C's loop, then try to move D's input cache
    // to a loop that holds no consumer of it.
    let mut s = chain(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let b = s.get_block("B").unwrap();
    let lb = s.get_loops(b).unwrap();
    let bsh = s.cache_read(c, 0, "shared").unwrap();
    let e = fails(s, |s| s.compute_at(bsh, lb[0]));
    assert!(
        matches!(e, ScheduleError::NotEnclosingConsumer { .. }),
        "{e}"
    );
}

#[test]
fn split_of_a_bound_loop() {
    let mut s = chain(16);
    let s = &mut s;
    let b = s.get_block("B").unwrap();
    let l = s.get_loops(b).unwrap();
    s.bind(l[0], ThreadIdxX).unwrap();
    let e = fails(s, |s| s.split(l[0], &[None, Some(4)]));
    assert!(
        matches!(
            e,
            ScheduleError::LoopKind {
                primitive: "split",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn handle_from_another_schedule() {
    let mut other = chain(16);
    let b = other.get_block("B").unwrap();
    let l = other.get_loops(b).unwrap();
    let mut s = chain(16);
    let s = &mut s;
    let e = fails(s, |s| s.unroll(l[0]));
    assert!(matches!(e, ScheduleError::UnknownHandle { .. }), "{e}");
}

#[test]
fn fuse_with_too_large_extent() {
    let a = te::placeholder("A", &[65536, 65536], DType::F32);
    let b = te::compute("B", &[("i", 65536), ("j", 65536)], |i| {
        a.at(&[&i[0], &i[1]])
    });
    // The tensors themselves are too large for i32 indexing: te refuses them.
    assert!(te::create_func("big", [&a, &b]).is_err());
}

#[test]
fn fuse_of_a_spatial_and_a_reduce_loop() {
    let mut s = matmul_epilogue(16);
    let s = &mut s;
    let c = s.get_block("C").unwrap();
    let l = s.get_loops(c).unwrap();
    let e = fails(s, |s| s.fuse(&[l[1], l[2]]));
    assert!(matches!(e, ScheduleError::FuseMixesIterKinds { .. }), "{e}");
}
