//! `gemv`, `gemv-f16`: products of few rows, `C[m, n] = A[m, k] @ B[k, n]` with `m` ≤ 8 —
//! a language model's decode step, each weight `B` read once — on the skinny-product
//! template ([`weft_kernels::gemv`]). Memory-bound: `weft bench` reports GB/s beside
//! the device-to-device copy of as many bytes (the roof) and cuBLAS at the same shape.
//! The benchmark shapes are TinyLlama-1.1B's decode products (q/k/v fused, o, gate/up
//! fused, down, the vocabulary head) at batch 1, and gate/up at batch 8.

use weft_ir::prelude::*;
use weft_ir::te::TeError;

use crate::matmul::{reference, row_reference};
use crate::{Definition, OpSpec, Shape};

/// TinyLlama's decode products as `[m, n, k]`.
const LLAMA: &[&[i64]] = &[
    &[1, 2560, 2048],
    &[1, 2048, 2048],
    &[1, 11264, 2048],
    &[1, 2048, 5632],
    &[1, 32000, 2048],
    &[8, 11264, 2048],
];

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "gemv",
    summary: "fp32 product of few rows (m ≤ 8: decode) C[m, n] = A[m, k] @ B[k, n], B streamed",
    dims: &[("m", 1), ("n", 2048), ("k", 2048)],
    schedules: &["template"],
    best: "template",
    bench: LLAMA,
    small: &[&[1, 33, 7], &[3, 70, 100]],
    seed: "issue 60",
    zero_ok: &[],
    check: check_rows,
    template: Some(&crate::templates::GEMV),
    define: |shape| define(shape, DType::F32),
    apply: crate::no_primitives,
    reference,
    rounding_growth: 1.0,
    row_reference: Some(row_reference),
};

/// `gemv-f16`: f16 operands and output, f32 sums.
pub(crate) const F16_SPEC: OpSpec = OpSpec {
    name: "gemv-f16",
    summary: "fp16 product of few rows (m ≤ 8: decode), fp32 accumulation: C[m, n] = A[m, k] @ B[k, n], B streamed",
    template: Some(&crate::templates::GEMV_F16),
    define: |shape| define(shape, DType::F16),
    ..SPEC
};

/// A shape of more rows than the template takes is refused, naming the bound.
fn check_rows(shape: &Shape) -> Result<(), String> {
    let m = shape.get("m");
    match weft_kernels::gemv::takes(m) {
        true => Ok(()),
        false => Err(format!(
            "m = {m}: the skinny-product template takes 1 to {} rows (use matmul)",
            weft_kernels::gemv::MAX_M
        )),
    }
}

fn define(shape: &Shape, dtype: DType) -> Result<Definition, TeError> {
    let (m, n, k) = (shape.get("m"), shape.get("n"), shape.get("k"));
    let a = te::placeholder("A", &[m, k], dtype);
    let b = te::placeholder("B", &[k, n], dtype);
    let r = te::reduce_axis("k", k);
    let acc = te::compute("C_acc", &[("i", m), ("j", n)], |i| {
        let prod = a.at(&[i[0].clone(), r.expr()]).cast(DType::F32)
            * b.at(&[r.expr(), i[1].clone()]).cast(DType::F32);
        te::sum(prod, &[&r])
    });
    let c = te::compute("C", &[("i", m), ("j", n)], |i| {
        let v = acc.at(&[i[0].clone(), i[1].clone()]);
        if dtype == DType::F32 {
            v
        } else {
            v.cast(dtype)
        }
    });
    let e = dtype.bytes() as f64;
    Ok(Definition {
        func: te::create_func("gemv", [&a, &b, &c])?,
        inputs: vec![a, b],
        output: c,
        flops: 2.0 * (m * n * k) as f64,
        bytes: e * (m * k + k * n + m * n) as f64,
    })
}
