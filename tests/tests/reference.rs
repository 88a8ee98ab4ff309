//! The CUDA reference rows of `weft bench`: cuBLAS SGEMM gives the row-major product (a
//! non-square shape catches a transposed call) and a device-to-device copy times. Skipped
//! without CUDA (or cuBLAS) unless `WEFT_REQUIRE` names `cuda` (or `cublas`).

use ndarray::{Array2, ArrayView2};
use rand::{Rng, SeedableRng, rngs::StdRng};
use weft_runtime::Target;
use weft_runtime::reference::{CudaReference, ReferenceError};
use weft_runtime::testing::require_or_skip;

fn open() -> Option<CudaReference> {
    let target = Target::parse("cuda").unwrap_or_else(|e| panic!("{e}"));
    match CudaReference::open(&target) {
        Ok(r) => Some(r),
        Err(e) if e.is_unavailable() => {
            require_or_skip("cuda", &e.to_string());
            None
        }
        Err(e) => panic!("CUDA is present but the reference failed to open: {e}"),
    }
}

#[test]
fn cublas_sgemm_is_row_major_a_times_b() {
    let Some(mut r) = open() else { return };
    let (m, n, k) = (100, 72, 136);
    let mut rng = StdRng::seed_from_u64(1);
    let a: Vec<f32> = (0..m * k).map(|_| rng.random()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.random()).collect();
    let (c, timing) = match r.sgemm(&a, &b, [m, n, k], 1, 3) {
        Ok(x) => x,
        Err(e @ ReferenceError::CublasMissing { .. }) => {
            require_or_skip("cublas", &e.to_string());
            return;
        }
        Err(e) => panic!("SGEMM failed: {e}"),
    };
    assert_eq!(timing.all.len(), 3);
    let view = |v: &[f32], r, c| -> Array2<f64> {
        ArrayView2::from_shape((r, c), v)
            .unwrap_or_else(|e| panic!("{e}"))
            .mapv(f64::from)
    };
    let want = view(&a, m, k).dot(&view(&b, k, n));
    let got = view(&c, m, n);
    let worst = want
        .iter()
        .zip(got.iter())
        .map(|(w, g)| (w - g).abs() / w.abs().max(1e-6))
        .fold(0.0f64, f64::max);
    assert!(worst <= 1e-4, "cuBLAS result off by {worst:e}");
}

#[test]
fn sgemm_rejects_mismatched_inputs() {
    let Some(mut r) = open() else { return };
    let err = r.sgemm(&[1.0; 6], &[1.0; 6], [2, 2, 2], 0, 1);
    assert!(
        matches!(err, Err(ReferenceError::BadGemm { .. })),
        "{err:?}"
    );
}

#[test]
fn device_to_device_copy_times() {
    let Some(mut r) = open() else { return };
    let t = r
        .copy(1 << 24, 1, 5)
        .unwrap_or_else(|e| panic!("copy failed: {e}"));
    assert_eq!(t.all.len(), 5);
    assert!(!t.median.is_zero());
}

#[test]
fn reference_on_a_non_cuda_target_is_an_unavailable_error() {
    let err = CudaReference::open(&Target::Cpu);
    assert!(matches!(&err, Err(e) if e.is_unavailable()), "{err:?}");
}
