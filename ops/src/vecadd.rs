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
        // A fixed grid of 2048 blocks of 256 threads walks the vector: coalesced, and
        // within every target's grid limit at any length.
        _ => {
            let p = s.split(i[0], &[None, Some(2048), Some(256)])?;
            s.bind(p[1], ThreadAxis::BlockIdxX)?;
            s.bind(p[2], ThreadAxis::ThreadIdxX)?;
        }
    }
    Ok(())
}

fn reference(inputs: &[ArrayD<f64>], _: &Shape) -> ArrayD<f64> {
    &inputs[0] + &inputs[1]
}
