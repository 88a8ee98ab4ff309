//! The rule-based schedules (the Hidet paper's §5.1.2): one for injective ops, one for
//! reductions, each right for any op of its kind, so that no node of a model's graph is
//! left without a kernel, and a split-K product's partial sums have a summing kernel
//! ([`crate::templates::split_k`]).
//!
//! - **Injective**: one thread per output element, the output's loops fused into one
//!   and split into blocks of 256 threads.
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

/// Why a rule-based schedule failed (a bug: the rules take any op of their kind).
fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// `output` (a te compute over `inputs`) with one thread per element.
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

/// Fuses every loop of `block` and binds one thread per iteration.
fn one_thread_per_element(
    s: &mut Schedule,
    block: &str,
    rank: usize,
    elements: i64,
) -> Result<(), ScheduleError> {
    let b = s.get_block(block)?;
    let loops = s.get_loops(b)?;
    let fused = if rank > 1 {
        s.fuse(&loops[..rank])?
    } else {
        loops[0]
    };
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
