//! `gemv-kmajor`, `gemv-kmajor-f16`: products of few rows over a K-major weight,
//! `C[m, n] = Σ_k A[m, k] · W[n, k]` with `m` ≤ 8 and `W` stored `[n, k]` (PyTorch's
//! `nn.Linear` layout) — the decode step's products as every fast decode kernel reads
//! them — on [`weft_kernels::gemv::kmajor`]. The same shapes as `gemv`/`gemv-f16`
//! (`m`, `n`, `k`), so the two layouts are timed side by side at TinyLlama's decode
//! products; cuBLAS runs beside with `op(B) = Bᵀ` (it reads this layout natively).
//! Memory-bound: `weft bench` and `weft sweep` report GB/s.

use ndarray::{ArrayD, Ix2};
use weft_ir::prelude::*;
use weft_ir::te::TeError;

use crate::{Definition, OpSpec, Shape};

/// TinyLlama's decode products as `[m, n, k]` (as `gemv`'s).
const LLAMA: &[&[i64]] = &[
    &[1, 2560, 2048],
    &[1, 2048, 2048],
    &[1, 11264, 2048],
    &[1, 2048, 5632],
    &[1, 32000, 2048],
    &[8, 11264, 2048],
];

pub(crate) const SPEC: OpSpec = OpSpec {
    name: "gemv-kmajor",
    summary: "fp32 product of few rows (m ≤ 8: decode) over a K-major weight: C[m, n] = Σ_k A[m, k] · W[n, k], W streamed a warp a column",
    dims: &[("m", 1), ("n", 2048), ("k", 2048)],
    schedules: &["template"],
    best: "template",
    bench: LLAMA,
    small: &[&[1, 33, 7], &[3, 70, 100], &[8, 5, 1001]],
    seed: "issue 60",
    zero_ok: &[],
    check: check_rows,
    template: Some(&crate::templates::GEMV_KMAJOR),
    define: |shape| define(shape, DType::F32),
    apply: crate::no_primitives,
    reference,
    rounding_growth: 1.0,
    row_reference: Some(row_reference),
};

/// `gemv-kmajor-f16`: f16 operands and output, f32 sums.
pub(crate) const F16_SPEC: OpSpec = OpSpec {
    name: "gemv-kmajor-f16",
    summary: "fp16 product of few rows (m ≤ 8: decode) over a K-major weight, fp32 accumulation: C[m, n] = Σ_k A[m, k] · W[n, k]",
    template: Some(&crate::templates::GEMV_KMAJOR_F16),
    define: |shape| define(shape, DType::F16),
    ..SPEC
};

/// A shape of more rows than the template takes is refused, naming the bound.
fn check_rows(shape: &Shape) -> Result<(), String> {
    let m = shape.get("m");
    match weft_kernels::gemv::takes(m) {
        true => Ok(()),
        false => Err(format!(
            "m = {m}: the K-major skinny-product template takes 1 to {} rows (use matmul)",
            weft_kernels::gemv::MAX_M
        )),
    }
}

fn define(shape: &Shape, dtype: DType) -> Result<Definition, TeError> {
    let (m, n, k) = (shape.get("m"), shape.get("n"), shape.get("k"));
    let a = te::placeholder("A", &[m, k], dtype);
    let w = te::placeholder("W", &[n, k], dtype);
    let r = te::reduce_axis("k", k);
    let acc = te::compute("C_acc", &[("i", m), ("j", n)], |i| {
        let prod = a.at(&[i[0].clone(), r.expr()]).cast(DType::F32)
            * w.at(&[i[1].clone(), r.expr()]).cast(DType::F32);
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
        func: te::create_func("gemv_kmajor", [&a, &w, &c])?,
        inputs: vec![a, w],
        output: c,
        flops: 2.0 * (m * n * k) as f64,
        bytes: e * (m * k + k * n + m * n) as f64,
    })
}

/// `A · Wᵀ` in float64 (empty for inputs that are not two matrices).
fn reference(inputs: &[ArrayD<f64>], _: &Shape) -> ArrayD<f64> {
    let (Ok(a), Ok(w)) = (
        inputs[0].view().into_dimensionality::<Ix2>(),
        inputs[1].view().into_dimensionality::<Ix2>(),
    ) else {
        return ArrayD::zeros(ndarray::IxDyn(&[0]));
    };
    a.dot(&w.t()).into_dyn()
}

/// Row `i` of the reference, `A[i, :] · Wᵀ` in float64 (`None` for inputs that are not
/// two matrices of matching shapes, or a row out of range).
fn row_reference(inputs: &[ArrayD<f64>], i: usize) -> Option<Vec<f64>> {
    let [a, w] = inputs else { return None };
    let a = a.view().into_dimensionality::<Ix2>().ok()?;
    let w = w.view().into_dimensionality::<Ix2>().ok()?;
    if a.dim().1 != w.dim().1 || i >= a.dim().0 {
        return None;
    }
    Some(w.rows().into_iter().map(|wj| a.row(i).dot(&wj)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    /// The reference reads `W` K-major: `C[0, j] = Σ_k A[0, k] · W[j, k]`, not `W[k, j]`.
    #[test]
    fn the_reference_reads_w_k_major() {
        let a = ArrayD::from_shape_vec(IxDyn(&[1, 2]), vec![1.0, 10.0]).unwrap();
        // W [n = 3, k = 2].
        let w = ArrayD::from_shape_vec(IxDyn(&[3, 2]), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let shape = Shape::parse("gemv-kmajor", "m=1,n=3,k=2").unwrap();
        let c = reference(&[a.clone(), w.clone()], &shape);
        assert_eq!(
            c.iter().copied().collect::<Vec<_>>(),
            vec![21.0, 43.0, 65.0]
        );
        assert_eq!(row_reference(&[a, w], 0), Some(vec![21.0, 43.0, 65.0]));
    }
}
