//! Checking an output against the float64 reference, cheaply enough for benchmark sizes.
//!
//! Small outputs are compared whole with [`crate::max_rel_error`]. A large matmul (fp32 or fp16)
//! (4096³ would take the f64 reference tens of seconds) is compared on a seeded random
//! sample of rows computed in f64 here, after a scan of the whole output for NaN (the
//! poison of an element no thread wrote). A [`Checker`] computes the reference once for
//! many outputs.

use crate::Workload;
use ndarray::{ArrayD, ArrayView2, Ix2};
use rand::seq::index::sample;
use rand::{SeedableRng, rngs::StdRng};

/// The largest relative error a fp32 result may have.
pub const TOLERANCE: f64 = 1e-4;

/// Multiply-adds above which a matmul is checked on sampled rows.
const FULL_CHECK_MACS: f64 = (1u64 << 24) as f64;

/// Rows checked in a sampled matmul (besides the first and the last).
const SAMPLED_ROWS: usize = 32;

/// The largest relative error of `output` against the reference of `workload` on
/// `inputs` (infinite for NaN anywhere or a wrong shape).
pub fn max_error(workload: &Workload, inputs: &[ArrayD<f32>], output: &ArrayD<f32>) -> f64 {
    Checker::new(workload, inputs).max_error(output)
}

/// The reference of one workload on one set of inputs, computed once, against which many
/// outputs are checked (a tuner checks every config it times).
#[derive(Debug)]
pub struct Checker {
    expected: Expected,
    /// The smallest `|ref|` errors are relative to (see [`Workload::error_floor`]).
    floor: f64,
}

#[derive(Debug)]
enum Expected {
    /// The whole float64 reference.
    Full(ArrayD<f64>),
    /// Sampled rows of a large matmul: `(row, its reference)`.
    Rows(Vec<(usize, Vec<f64>)>),
    /// The reference could not be computed (inputs of the wrong count or shape).
    Unavailable,
}

impl Checker {
    /// Computes the reference: whole, or on sampled rows for a matmul above
    /// [`FULL_CHECK_MACS`].
    pub fn new(workload: &Workload, inputs: &[ArrayD<f32>]) -> Checker {
        if matches!(workload.op.name, "matmul" | "matmul-f16")
            && workload.flops / 2.0 > FULL_CHECK_MACS
            && let Some(rows) = sampled_matmul_rows(inputs)
        {
            return Checker {
                expected: Expected::Rows(rows),
                floor: workload.error_floor(),
            };
        }
        let inputs64: Vec<ArrayD<f64>> = inputs.iter().map(|a| a.mapv(f64::from)).collect();
        let expected = match workload.reference(&inputs64) {
            Ok(reference) => Expected::Full(reference),
            Err(_) => Expected::Unavailable,
        };
        Checker {
            expected,
            floor: workload.error_floor(),
        }
    }

    /// The largest relative error of `output` (infinite for NaN anywhere, a wrong shape,
    /// or no reference).
    pub fn max_error(&self, output: &ArrayD<f32>) -> f64 {
        match &self.expected {
            Expected::Full(reference) => crate::max_rel_error_above(output, reference, self.floor),
            Expected::Rows(rows) => {
                let Ok(c) = output.view().into_dimensionality::<Ix2>() else {
                    return f64::INFINITY;
                };
                if c.iter().any(|x| !x.is_finite()) {
                    return f64::INFINITY;
                }
                let mut worst: f64 = 0.0;
                for (i, want) in rows {
                    if *i >= c.dim().0 || want.len() != c.dim().1 {
                        return f64::INFINITY;
                    }
                    for (&got, &want) in c.row(*i).iter().zip(want) {
                        let e = (f64::from(got) - want).abs() / want.abs().max(self.floor);
                        worst = worst.max(e);
                    }
                }
                worst
            }
            Expected::Unavailable => f64::INFINITY,
        }
    }
}

/// The reference of sampled rows of `A @ B`; `None` when the inputs are not two matrices
/// of matching shapes.
fn sampled_matmul_rows(inputs: &[ArrayD<f32>]) -> Option<Vec<(usize, Vec<f64>)>> {
    let [a, b] = inputs else { return None };
    let a = a.view().into_dimensionality::<Ix2>().ok()?;
    let b = b.view().into_dimensionality::<Ix2>().ok()?;
    let (m, k) = a.dim();
    if b.dim().0 != k {
        return None;
    }
    Some(
        sample_rows(m)
            .into_iter()
            .map(|i| (i, matmul_row(a, b, i)))
            .collect(),
    )
}

/// Row `i` of `A @ B` in float64.
fn matmul_row(a: ArrayView2<f32>, b: ArrayView2<f32>, i: usize) -> Vec<f64> {
    let mut acc = vec![0.0f64; b.dim().1];
    for (kk, &aik) in a.row(i).iter().enumerate() {
        let aik = f64::from(aik);
        for (x, &bkj) in acc.iter_mut().zip(b.row(kk).iter()) {
            *x += aik * f64::from(bkj);
        }
    }
    acc
}

/// Row indices to check of an `m`-row result: the first, the last and a seeded sample.
pub fn sample_rows(m: usize) -> Vec<usize> {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    let mut rows: Vec<usize> = sample(&mut rng, m, SAMPLED_ROWS.min(m)).into_vec();
    rows.extend([0, m.saturating_sub(1)]);
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// The largest relative error of `c` on `rows`, each computed in f64 from `a` and `b`
/// (with `|ref|` floored at 1e-6, as [`crate::max_rel_error`] does).
pub fn matmul_rows_error(
    a: ArrayView2<f32>,
    b: ArrayView2<f32>,
    c: ArrayView2<f32>,
    rows: &[usize],
) -> f64 {
    let mut worst: f64 = 0.0;
    for &i in rows {
        for (&got, want) in c.row(i).iter().zip(matmul_row(a, b, i)) {
            let got = f64::from(got);
            if !got.is_finite() {
                return f64::INFINITY;
            }
            worst = worst.max((got - want).abs() / want.abs().max(1e-6));
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Shape;

    fn matmul(m: i64, n: i64, k: i64) -> (Workload, Vec<ArrayD<f32>>, ArrayD<f32>) {
        let text = format!("m={m},n={n},k={k}");
        let w = Workload::new("matmul", &Shape::parse("matmul", &text).expect("shape"))
            .expect("workload");
        let inputs = w.random_inputs(1);
        let a = inputs[0].view().into_dimensionality::<Ix2>().expect("2-D");
        let b = inputs[1].view().into_dimensionality::<Ix2>().expect("2-D");
        let c = a.dot(&b).into_dyn();
        (w, inputs, c)
    }

    #[test]
    fn sampled_check_accepts_a_right_product_and_catches_nan() {
        // 320 x 300 x 200 = 19.2M multiply-adds: above the full-check threshold.
        let (w, inputs, mut c) = matmul(320, 300, 200);
        assert!(max_error(&w, &inputs, &c) < TOLERANCE);
        // An unwritten element in a row the sample may not cover is still caught.
        c[[317, 5]] = f32::NAN;
        assert!(max_error(&w, &inputs, &c).is_infinite());
    }

    #[test]
    fn sampled_check_catches_a_wrong_sampled_row() {
        let (w, inputs, mut c) = matmul(320, 300, 200);
        c[[0, 7]] += 1.0;
        assert!(max_error(&w, &inputs, &c) > TOLERANCE);
    }

    #[test]
    fn small_outputs_are_checked_whole() {
        let (w, inputs, mut c) = matmul(16, 8, 4);
        assert!(max_error(&w, &inputs, &c) < TOLERANCE);
        c[[9, 3]] *= 2.0;
        assert!(max_error(&w, &inputs, &c) > TOLERANCE);
    }
}
