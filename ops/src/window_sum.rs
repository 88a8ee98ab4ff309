//! `window-sum`: `B[i] = A[i] + A[i + 1] + A[i + 2]` (seed 001).

use ndarray::{ArrayD, IxDyn, s};
use weft_ir::prelude::*;
use weft_ir::schedule::{Schedule, ScheduleError};
use weft_ir::te::TeError;

use crate::{Definition, OpSpec, Shape};

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "window-sum",
    summary: "sliding sum of three: B[i] = A[i] + A[i+1] + A[i+2] (A has n + 2 elements)",
    dims: &[("n", 1024)],
    schedules: &["split-bind", "shared-fetch"],
    best: "shared-fetch",
    bench: &[&[1 << 22]],
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
    let a = te::placeholder("A", &[n + 2], DType::F32);
    let b = te::compute("B", &[("i", n)], |i| {
        a.at(&[&i[0]]) + a.at(&[&i[0] + 1]) + a.at(&[&i[0] + 2])
    });
    Ok(Definition {
        func: te::create_func("window_sum", [&a, &b])?,
        inputs: vec![a],
        output: b,
        flops: 2.0 * n as f64,
        bytes: 4.0 * (2 * n + 2) as f64,
    })
}

fn apply(s: &mut Schedule, name: &str) -> Result<(), ScheduleError> {
    let nthread = 128;
    let c = s.get_block("B")?;
    let i = s.get_loops(c)?;
    let p = s.split(i[0], &[None, Some(nthread)])?;
    s.bind(p[0], ThreadAxis::BlockIdxX)?;
    s.bind(p[1], ThreadAxis::ThreadIdxX)?;
    if name == "shared-fetch" {
        // Seed 001: cache A in shared memory per block, fetched cooperatively.
        let sh = s.cache_read(c, 0, "shared")?;
        s.compute_at(sh, p[1])?;
        let ax = s.get_loops(sh)?;
        if let Some(last) = ax.last() {
            let q = s.split(*last, &[None, Some(nthread)])?;
            s.bind(q[1], ThreadAxis::ThreadIdxX)?;
        }
    }
    Ok(())
}

fn reference(inputs: &[ArrayD<f64>], _: &Shape) -> ArrayD<f64> {
    let a = &inputs[0];
    let n = a.len() - 2;
    let a1 = a.slice(s![0..n]).to_owned() + a.slice(s![1..n + 1]) + a.slice(s![2..n + 2]);
    a1.into_shape_with_order(IxDyn(&[n]))
        .unwrap_or_else(|_| ArrayD::zeros(IxDyn(&[n])))
}
