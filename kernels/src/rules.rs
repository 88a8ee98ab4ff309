//! The rule-based schedules (the Hidet paper's §5.1.2): one for injective ops, one for
//! reductions, each right for any op of its kind, so that no node of a model's graph is
//! left without a kernel, and a split-K product's partial sums have a summing kernel
//! ([`crate::split_k`]).
//!
//! - **Injective**: the output's loops fused into one and split into blocks of 256
//!   threads, one element a thread — or, for outputs of a million elements and more,
//!   [`PER_THREAD`] elements a thread, 256 apart (each warp's accesses stay
//!   contiguous, and a thread has that many independent loads in flight: with one
//!   4-byte load a thread, a 16.6 MB copy ran at 26% of an H200's bandwidth, Nsight
//!   Compute 2026-11-28).
//! - **Reduction**: one thread per output element as above, accumulating its whole
//!   reduction in a register (`cache_write` to a local accumulator) and storing once —
//!   which is also what lets an epilogue be fused into its store.

use weft_ir::func::Func;
use weft_ir::fusion::fuse;
use weft_ir::prelude::*;
use weft_ir::schedule::{LoopRV, Schedule, ScheduleError};

/// Threads per block of both rules.
pub const THREADS: i64 = 256;

/// The most blocks along one grid dimension (WebGPU's limit).
const MAX_GRID: i64 = 65535;

/// Elements a thread of the injective rule takes at outputs of [`WIDE_FROM`] elements
/// and more.
pub const PER_THREAD: i64 = 4;

/// From this many output elements a thread of the injective rule takes [`PER_THREAD`]:
/// below it, one element a thread already fills a large GPU (a million elements are
/// 4096 blocks, some 30 for each of an H100's multiprocessors).
pub const WIDE_FROM: i64 = 1 << 20;

/// What the injective rule gives a thread at an output of `elements`, for a kernel's
/// description: "one thread per element" or "4 elements a thread".
pub fn injective_what(elements: i64) -> String {
    if wide(elements) {
        format!("{PER_THREAD} elements a thread, {THREADS} apart")
    } else {
        "one thread per element".to_string()
    }
}

/// Whether the injective rule gives a thread [`PER_THREAD`] elements of an output of
/// `elements`: from [`WIDE_FROM`] up, where the blocks fit one grid dimension.
fn wide(elements: i64) -> bool {
    let blocks = (elements + PER_THREAD * THREADS - 1) / (PER_THREAD * THREADS);
    elements >= WIDE_FROM && blocks <= MAX_GRID
}

/// Why a rule-based schedule failed (a bug: the rules take any op of their kind).
fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// `output` (a te compute over `inputs`) with one thread per element, or
/// [`PER_THREAD`] at outputs of [`WIDE_FROM`] elements and more.
pub fn injective(name: &str, inputs: &[Buffer], output: &Buffer) -> Result<Func, String> {
    let refs: Vec<&Buffer> = inputs.iter().collect();
    let func = te::create_func_with_inputs(name, &refs, &[output]).map_err(|e| err("te", e))?;
    let mut s = Schedule::new(func);
    one_thread_per_element(&mut s, output.name(), output.ndim(), output.numel())
        .map_err(|e| err("injective schedule", e))?;
    Ok(s.func().clone())
}

/// `reduced` (a te compute whose body is a reduction over `inputs`) with one thread per
/// output element and a register accumulator, and `output` (elementwise on `reduced`,
/// or `reduced` itself) fused into its store.
pub fn reduction(
    name: &str,
    inputs: &[Buffer],
    reduced: &Buffer,
    output: &Buffer,
) -> Result<Func, String> {
    let refs: Vec<&Buffer> = inputs.iter().collect();
    let func = te::create_func_with_inputs(name, &refs, &[reduced]).map_err(|e| err("te", e))?;
    let mut s = Schedule::new(func);
    let sched = |s: &mut Schedule| -> Result<(), ScheduleError> {
        let block = s.get_block(reduced.name())?;
        if reduced.ndim() == 0 {
            // A scalar: one thread sums every term, its reduction loops serial.
            if let Some(&first) = s.get_loops(block)?.first() {
                s.decompose_reduction(block, first)?;
            }
            return Ok(());
        }
        let local = s.cache_write(block, 0, "local")?;
        let loops = s.get_loops(block)?;
        let spatial = reduced.ndim();
        let fused = if spatial > 1 {
            s.fuse(&loops[..spatial])?
        } else {
            loops[0]
        };
        let thread = bind_threads(s, fused, reduced.numel())?;
        s.reverse_compute_at(local, thread)?;
        if loops.len() > spatial {
            s.decompose_reduction(block, loops[spatial])?;
        }
        Ok(())
    };
    sched(&mut s).map_err(|e| err("reduction schedule", e))?;
    let func = s.func().clone();
    if output == reduced {
        return Ok(func);
    }
    fuse(&func, output)
        .map(|f| f.func)
        .map_err(|e| err("fusing the reduction's epilogue", e))
}

/// Fuses every loop of `block` and binds one thread per iteration, or per
/// [`PER_THREAD`] iterations (an unrolled loop, 256 apart) from [`WIDE_FROM`] up.
fn one_thread_per_element(
    s: &mut Schedule,
    block: &str,
    rank: usize,
    elements: i64,
) -> Result<(), ScheduleError> {
    let b = s.get_block(block)?;
    let loops = s.get_loops(b)?;
    if rank == 0 {
        // A scalar: one thread computes it.
        return Ok(());
    }
    let fused = if rank > 1 {
        s.fuse(&loops[..rank])?
    } else {
        loops[0]
    };
    if wide(elements) {
        // element = (block · PER_THREAD + e) · THREADS + thread: a warp's lanes read
        // consecutive elements at every e.
        let parts = s.split(fused, &[None, Some(PER_THREAD), Some(THREADS)])?;
        s.reorder(&[parts[0], parts[2], parts[1]])?;
        s.bind(parts[0], ThreadAxis::BlockIdxX)?;
        s.bind(parts[2], ThreadAxis::ThreadIdxX)?;
        s.unroll(parts[1])?;
        return Ok(());
    }
    bind_threads(s, fused, elements).map(|_| ())
}

/// Binds loop `fused` of `elements` iterations to threads: blocks of [`THREADS`], in a
/// two-dimensional grid where one dimension would pass WebGPU's 65535 blocks. Returns the
/// thread loop.
fn bind_threads(s: &mut Schedule, fused: LoopRV, elements: i64) -> Result<LoopRV, ScheduleError> {
    let blocks = (elements + THREADS - 1) / THREADS;
    if blocks <= MAX_GRID {
        let parts = s.split(fused, &[None, Some(THREADS)])?;
        s.bind(parts[0], ThreadAxis::BlockIdxX)?;
        s.bind(parts[1], ThreadAxis::ThreadIdxX)?;
        Ok(parts[1])
    } else {
        let gx = (blocks + MAX_GRID - 1) / MAX_GRID;
        let gx = (blocks + gx - 1) / gx;
        let parts = s.split(fused, &[None, Some(gx), Some(THREADS)])?;
        s.bind(parts[0], ThreadAxis::BlockIdxY)?;
        s.bind(parts[1], ThreadAxis::BlockIdxX)?;
        s.bind(parts[2], ThreadAxis::ThreadIdxX)?;
        Ok(parts[2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ir::data::{Arg, TensorData};

    /// Runs `func` on the interpreter with `x` and a poisoned output of `n` elements.
    fn run(func: &Func, x: Vec<f32>, n: usize) -> Vec<f64> {
        let lowered = weft_ir::lower::lower(func).unwrap();
        let mut args = vec![
            Arg::Tensor(TensorData::F32(x)),
            Arg::Tensor(TensorData::poisoned(DType::F32, n)),
        ];
        weft_ir::interp::run(&lowered, &mut args).unwrap();
        let Some(Arg::Tensor(out)) = args.last() else {
            unreachable!("the output is the last argument")
        };
        out.to_f64_vec()
    }

    /// A scalar output (an op after a ReduceSum that kept no dimension) is one thread's
    /// work: no loop to bind, no panic.
    #[test]
    fn scalars_are_computed_by_one_thread() {
        let x = te::placeholder("x", &[], DType::F32);
        let none: [Expr; 0] = [];
        let y = te::compute("y", &[], |_| Expr::f32(0.0) - x.at(&none));
        let func = injective("neg", std::slice::from_ref(&x), &y).unwrap();
        assert_eq!(run(&func, vec![2.5], 1), [-2.5]);

        let v = te::placeholder("v", &[7], DType::F32);
        let r = te::reduce_axis("r", 7);
        let sum = te::compute("sum", &[], |_| te::sum(v.at(&[&r.expr()]), &[&r]));
        let func = reduction("sum", std::slice::from_ref(&v), &sum, &sum).unwrap();
        let got = run(&func, (1..=7).map(|i| i as f32).collect(), 1);
        assert_eq!(got, [28.0]);
    }
}
