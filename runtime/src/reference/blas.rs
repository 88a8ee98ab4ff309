//! cuBLAS GEMMs for the matmul rows: SGEMM (fp32) and HGEMM (fp16 inputs and output,
//! fp32 accumulation: `cublasGemmEx` with `CUBLAS_COMPUTE_32F`, what PyTorch runs for a
//! half-precision matmul), with `B` row-major `[k, n]` or K-major `[n, k]` (the
//! `gemv-kmajor` ops' weight, PyTorch's `nn.Linear` layout: cuBLAS reads it transposed,
//! `op(B) = Bᵀ`).

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{Gemm, GemmConfig};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use half::f16;

use super::{CudaReference, ReferenceError, cublas, driver};
use crate::timing::Timing;

impl CudaReference {
    /// Row-major `C[m, n] = A[m, k] @ B[k, n]` with cuBLAS SGEMM: the product (run once,
    /// downloaded, so a caller can check it), then the times of `iters` runs after
    /// `warmup` untimed ones.
    pub fn sgemm(
        &mut self,
        a: &[f32],
        b: &[f32],
        mnk: [usize; 3],
        warmup: usize,
        iters: usize,
    ) -> Result<(Vec<f32>, Timing), ReferenceError> {
        self.gemm(a, b, mnk, BLayout::RowMajor, (warmup, iters), "SGEMM")
    }

    /// [`CudaReference::sgemm`] in fp16 (HGEMM with fp32 accumulation): inputs rounded to
    /// fp16, the product returned widened to f32.
    pub fn hgemm(
        &mut self,
        a: &[f32],
        b: &[f32],
        mnk: [usize; 3],
        warmup: usize,
        iters: usize,
    ) -> Result<(Vec<f32>, Timing), ReferenceError> {
        self.hgemm_in(a, b, mnk, BLayout::RowMajor, (warmup, iters))
    }

    /// `C[m, n] = Σ_k A[m, k] · B[n, k]` (`B` K-major) with cuBLAS SGEMM reading `B`
    /// transposed; otherwise as [`CudaReference::sgemm`].
    pub fn sgemm_bt(
        &mut self,
        a: &[f32],
        b: &[f32],
        mnk: [usize; 3],
        warmup: usize,
        iters: usize,
    ) -> Result<(Vec<f32>, Timing), ReferenceError> {
        self.gemm(
            a,
            b,
            mnk,
            BLayout::KMajor,
            (warmup, iters),
            "SGEMM (B transposed)",
        )
    }

    /// [`CudaReference::sgemm_bt`] in fp16 (HGEMM with fp32 accumulation).
    pub fn hgemm_bt(
        &mut self,
        a: &[f32],
        b: &[f32],
        mnk: [usize; 3],
        warmup: usize,
        iters: usize,
    ) -> Result<(Vec<f32>, Timing), ReferenceError> {
        self.hgemm_in(a, b, mnk, BLayout::KMajor, (warmup, iters))
    }

    fn hgemm_in(
        &mut self,
        a: &[f32],
        b: &[f32],
        mnk: [usize; 3],
        layout: BLayout,
        runs: (usize, usize),
    ) -> Result<(Vec<f32>, Timing), ReferenceError> {
        let half = |x: &[f32]| x.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>();
        let name = match layout {
            BLayout::RowMajor => "HGEMM",
            BLayout::KMajor => "HGEMM (B transposed)",
        };
        let (c, timing) = self.gemm(&half(a), &half(b), mnk, layout, runs, name)?;
        Ok((c.into_iter().map(f16::to_f32).collect(), timing))
    }

    fn gemm<T>(
        &mut self,
        a: &[T],
        b: &[T],
        [m, n, k]: [usize; 3],
        layout: BLayout,
        (warmup, iters): (usize, usize),
        name: &str,
    ) -> Result<(Vec<T>, Timing), ReferenceError>
    where
        T: DeviceRepr + ValidAsZeroBits + Copy + Scale,
        cudarc::cublas::CudaBlas: Gemm<T>,
    {
        let bad = |what: String| ReferenceError::BadGemm { m, n, k, what };
        if a.len() != m * k || b.len() != k * n {
            return Err(bad(format!(
                "A has {} elements and B {}; expected {} and {}",
                a.len(),
                b.len(),
                m * k,
                k * n
            )));
        }
        let dim = |d: usize| i32::try_from(d).map_err(|_| bad(format!("{d} exceeds i32")));
        let (mi, ni, ki) = (dim(m)?, dim(n)?, dim(k)?);
        if m == 0 || n == 0 || k == 0 {
            return Err(bad("a dimension is zero".to_string()));
        }
        let stream = self.stream.clone();
        let a_dev = driver("uploading A", || stream.clone_htod(a))?;
        let b_dev = driver("uploading B", || stream.clone_htod(b))?;
        let mut c_dev = driver("allocating C", || stream.alloc_zeros::<T>(m * n))?;
        // cuBLAS is column-major. A row-major matrix read column-major is its transpose,
        // so C^T[n, m] = B^T[n, k] @ A^T[k, m] is one column-major GEMM over the same
        // memory: B first (ld n), then A (ld k), into C (ld n). A K-major B `[n, k]`
        // read column-major is `[k, n]` (ld k): transposed (`op = T`) it is the `[n, k]`
        // operand the same GEMM needs.
        let (transa, lda) = match layout {
            BLayout::RowMajor => (cublasOperation_t::CUBLAS_OP_N, ni),
            BLayout::KMajor => (cublasOperation_t::CUBLAS_OP_T, ki),
        };
        let cfg = GemmConfig {
            transa,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: ni,
            n: mi,
            k: ki,
            alpha: T::ONE,
            lda,
            ldb: ki,
            beta: T::ZERO,
            ldc: ni,
        };
        self.blas()?;
        let Some(blas) = self.blas.as_ref() else {
            return Err(bad("no cuBLAS handle".to_string()));
        };
        let mut run = || {
            // SAFETY: B holds k x n elements (row-major, ld n, or K-major, ld k), A is
            // m x k (ld k) and C is m x n (ld n), checked above, which is exactly what
            // `cfg` describes in column-major terms.
            cublas(name, || unsafe {
                blas.gemm(cfg, &b_dev, &a_dev, &mut c_dev)
            })
        };
        run()?;
        let timing = self.time(warmup, iters, &mut run)?;
        // Every run writes the same product: the last one is the one checked.
        let c = driver("downloading C", || stream.clone_dtoh(&c_dev))?;
        Ok((c, timing))
    }
}

/// How `B` is stored.
#[derive(Clone, Copy, Debug)]
enum BLayout {
    /// Row-major `[k, n]`.
    RowMajor,
    /// K-major `[n, k]` (each output column's `k` elements contiguous).
    KMajor,
}

/// The GEMM's `alpha = 1`, `beta = 0` in its element type.
trait Scale {
    const ONE: Self;
    const ZERO: Self;
}

impl Scale for f32 {
    const ONE: f32 = 1.0;
    const ZERO: f32 = 0.0;
}

impl Scale for f16 {
    const ONE: f16 = f16::ONE;
    const ZERO: f16 = f16::ZERO;
}
