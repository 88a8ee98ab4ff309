//! `vecadd`: `C[i] = A[i] + B[i]` (seed 001).

use ndarray::ArrayD;
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;

use crate::{Definition, OpSpec, Shape};

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "vecadd",
    summary: "vector add C = A + B",
    dims: &[("n", 1024)],
    schedules: &["split-bind", "grid-stride"],
    best: "grid-stride",
    bench: &[&[1 << 26]],
    small: &[&[1000]],
    template: None,
    seed: "001",
    zero_ok: &[],
    check: crate::any_shape,
    define,
    apply,
    reference,
    rounding_growth: 1.0,
    row_reference: None,
};

fn define(shape: &Shape) -> Result<Definition, TeError> {
    let n = shape.get("n");
    let a = te::placeholder("A", &[n], DType::F32);
    let b = te::placeholder("B", &[n], DType::F32);
    let c = te::compute("C", &[("i", n)], |i| a.at(&[&i[0]]) + b.at(&[&i[0]]));
    Ok(Definition {
        func: te::create_func("vecadd", [&a, &b, &c])?,
        inputs: vec![a, b],
        output: c,
        flops: n as f64,
        bytes: 12.0 * n as f64,
    })
}

fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
    let c = s.get_block("C")?;
    let i = s.get_loops(c)?;
    match name {
        // Seed 001: one thread per element, 128 threads per block.
        "split-bind" => {
            let p = s.split(i[0], &[None, Some(128)])?;
            s.bind(p[0], ThreadAxis::BlockIdxX)?;
            s.bind(p[1], ThreadAxis::ThreadIdxX)?;
        }
        // A grid of blocks of 256 threads walks the vector: coalesced, and within every
        // target's grid limit at any length. The grid is sized from n, up to GRID_CAP
        // blocks: a short vector launches only the blocks it fills (4 for n = 1024, not
        // 2048 of which 2044 would find nothing to do).
        _ => {
            let p = s.split(i[0], &[None, Some(grid_stride_blocks(s)), Some(BLOCK)])?;
            s.bind(p[1], ThreadAxis::BlockIdxX)?;
            s.bind(p[2], ThreadAxis::ThreadIdxX)?;
        }
    }
    Ok(())
}

/// Threads per block of `grid-stride`.
const BLOCK: i64 = 256;

/// Most blocks `grid-stride` launches: 2048 x 256 threads keep every SM of a large GPU
/// (132 on an H100, 2048 threads each) busy twice over; longer vectors loop.
const GRID_CAP: i64 = 2048;

/// Blocks of `grid-stride` for the vector in `s`: `ceil(n / BLOCK)`, at most [`GRID_CAP`]
/// (and at least one).
fn grid_stride_blocks(s: &Schedule) -> i64 {
    let n = s
        .func()
        .buffer_params()
        .find(|b| b.name() == "C")
        .and_then(|b| b.shape().first().copied())
        .unwrap_or(GRID_CAP * BLOCK);
    ((n + BLOCK - 1) / BLOCK).clamp(1, GRID_CAP)
}

fn reference(inputs: &[ArrayD<f64>], _: &Shape) -> ArrayD<f64> {
    &inputs[0] + &inputs[1]
}
