//! Reference rows for benchmarks on CUDA: cuBLAS SGEMM (what a generated matmul is
//! measured against) and a device-to-device copy (the bandwidth a memory-bound kernel can
//! hope for), timed with CUDA events like [`crate::cuda::CudaDevice`] times kernels.
//!
//! cudarc loads libcublas on first use and panics when it is absent, so [`CudaReference`]
//! probes for libcuda, and for libcublas before the first SGEMM, and reports absence as
//! [`ReferenceError`] values whose [`ReferenceError::is_unavailable`] is true; calls into
//! cudarc also run under `catch_unwind`.
//!
//! ```no_run
//! # fn demo() -> Result<(), weft_runtime::reference::ReferenceError> {
//! let target = weft_runtime::Target::parse("cuda").expect("a valid target string");
//! let mut r = weft_runtime::reference::CudaReference::open(&target)?;
//! let (m, n, k) = (1024, 1024, 1024);
//! let (a, b) = (vec![1.0f32; m * k], vec![1.0f32; k * n]);
//! let (c, timing) = r.sgemm(&a, &b, [m, n, k], 3, 20)?;
//! assert_eq!(c[0], k as f32);
//! let copy = r.copy(1 << 30, 3, 20)?; // 1 GiB read + 1 GiB written per run
//! # Ok(()) }
//! ```

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use cudarc::cublas::result::CublasError;
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use thiserror::Error;

use crate::cuda::{CudaError, probe_driver};
use crate::device::Timing;
use crate::target::Target;

const CUBLAS_HINT: &str = "cuBLAS comes with the CUDA toolkit or the `nvidia-cublas` pip \
                           wheel (its `nvidia/cu13/lib` folder on LD_LIBRARY_PATH)";

/// Why a reference measurement could not be taken.
#[derive(Debug, Error)]
pub enum ReferenceError {
    /// The target is not a `cuda` one.
    #[error("reference rows need a `cuda` target, got `{target}`")]
    NotCuda { target: String },
    /// libcuda, a device, or a driver call.
    #[error(transparent)]
    Cuda(#[from] CudaError),
    #[error("libcublas not found (tried {}); {CUBLAS_HINT}", tried.join(", "))]
    CublasMissing { tried: Vec<String> },
    #[error("cuBLAS, {op}: {source}")]
    Cublas {
        op: String,
        #[source]
        source: CublasError,
    },
    #[error("SGEMM {m}x{n}x{k}: {what}")]
    BadGemm {
        m: usize,
        n: usize,
        k: usize,
        what: String,
    },
    #[error("cannot time zero iterations")]
    NoIterations,
}

impl ReferenceError {
    /// True when a library or device is absent here, as opposed to a failure of one that
    /// is present.
    pub fn is_unavailable(&self) -> bool {
        match self {
            ReferenceError::NotCuda { .. } | ReferenceError::CublasMissing { .. } => true,
            ReferenceError::Cuda(e) => e.is_unavailable(),
            _ => false,
        }
    }
}

/// Runs `f`, turning a panic inside cudarc into [`CudaError::Panicked`].
fn guard<T>(op: &str, f: impl FnOnce() -> T) -> Result<T, CudaError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| CudaError::Panicked {
        op: op.to_string(),
        message: payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "(no message)".to_string()),
    })
}

/// A driver call under [`guard`], naming the operation in its error.
fn driver<T>(
    op: impl Into<String>,
    f: impl FnOnce() -> Result<T, DriverError>,
) -> Result<T, ReferenceError> {
    let op = op.into();
    Ok(guard(&op, f)?.map_err(|source| CudaError::Driver { op, source })?)
}

/// A cuBLAS call under [`guard`], naming the operation in its error.
fn cublas<T>(
    op: impl Into<String>,
    f: impl FnOnce() -> Result<T, CublasError>,
) -> Result<T, ReferenceError> {
    let op = op.into();
    guard(&op, f)?.map_err(|source| ReferenceError::Cublas { op, source })
}

/// Checks that libcublas can be loaded (under cudarc's names).
pub fn probe_cublas() -> Result<(), ReferenceError> {
    // SAFETY: only tries to open the library with `libloading` under cudarc's names.
    let present = guard("probing for libcublas", || unsafe {
        cudarc::cublas::sys::is_culib_present()
    })?;
    if present {
        Ok(())
    } else {
        let mut tried = cudarc::get_lib_name_candidates("cublas");
        let mut seen = std::collections::HashSet::new();
        tried.retain(|n| seen.insert(n.clone()));
        Err(ReferenceError::CublasMissing { tried })
    }
}

/// The reference kernels on the CUDA device a target names.
pub struct CudaReference {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    /// Created on the first SGEMM, so that a machine without cuBLAS still gets copy rows.
    blas: Option<CudaBlas>,
}

impl std::fmt::Debug for CudaReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaReference({})", self.name)
    }
}

impl CudaReference {
    /// Opens the device of a `cuda` target (its `-device=N`) after probing for libcuda.
    pub fn open(target: &Target) -> Result<CudaReference, ReferenceError> {
        let Target::Cuda { device, .. } = target else {
            return Err(ReferenceError::NotCuda {
                target: target.to_string(),
            });
        };
        probe_driver()?;
        let count = driver("cuDeviceGetCount", CudaContext::device_count)?.max(0) as usize;
        if *device >= count {
            return Err(CudaError::NoDevice {
                ordinal: *device,
                count,
            }
            .into());
        }
        let ctx = driver(format!("opening device {device}"), || {
            CudaContext::new(*device)
        })?;
        let name = driver("cuDeviceGetName", || ctx.name())?;
        let stream = ctx.default_stream();
        Ok(CudaReference {
            ctx,
            stream,
            name,
            blas: None,
        })
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cuBLAS handle, created (after a probe) on first use.
    fn blas(&mut self) -> Result<&CudaBlas, ReferenceError> {
        let blas = match self.blas.take() {
            Some(blas) => blas,
            None => {
                probe_cublas()?;
                let stream = self.stream.clone();
                cublas("creating a handle", || CudaBlas::new(stream))?
            }
        };
        Ok(self.blas.insert(blas))
    }

    /// Row-major `C[m, n] = A[m, k] @ B[k, n]` with cuBLAS SGEMM: the product (run once,
    /// downloaded, so a caller can check it), then the times of `iters` runs after
    /// `warmup` untimed ones.
    pub fn sgemm(
        &mut self,
        a: &[f32],
        b: &[f32],
        [m, n, k]: [usize; 3],
        warmup: usize,
        iters: usize,
    ) -> Result<(Vec<f32>, Timing), ReferenceError> {
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
        let mut c_dev = driver("allocating C", || stream.alloc_zeros::<f32>(m * n))?;
        // cuBLAS is column-major. A row-major matrix read column-major is its transpose,
        // so C^T[n, m] = B^T[n, k] @ A^T[k, m] is one column-major SGEMM over the same
        // memory: B first (ld n), then A (ld k), into C (ld n).
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: ni,
            n: mi,
            k: ki,
            alpha: 1.0f32,
            lda: ni,
            ldb: ki,
            beta: 0.0f32,
            ldc: ni,
        };
        self.blas()?;
        let Some(blas) = self.blas.as_ref() else {
            return Err(bad("no cuBLAS handle".to_string()));
        };
        let mut run = || {
            // SAFETY: B is k x n (ld n), A is m x k (ld k) and C is m x n (ld n), checked
            // above, which is exactly what `cfg` describes in column-major terms.
            cublas("SGEMM", || unsafe {
                blas.gemm(cfg, &b_dev, &a_dev, &mut c_dev)
            })
        };
        run()?;
        let timing = self.time(warmup, iters, &mut run)?;
        let c = driver("downloading C", || stream.clone_dtoh(&c_dev))?;
        driver("synchronize", || stream.synchronize())?;
        Ok((c, timing))
    }

    /// Times a device-to-device copy of `bytes` bytes (each run reads `bytes` and writes
    /// `bytes`): `iters` runs after `warmup` untimed ones.
    pub fn copy(
        &mut self,
        bytes: usize,
        warmup: usize,
        iters: usize,
    ) -> Result<Timing, ReferenceError> {
        let stream = self.stream.clone();
        let bytes = bytes.max(1);
        let src = driver(format!("allocating {bytes} bytes"), || {
            stream.alloc_zeros::<u8>(bytes)
        })?;
        let mut dst = driver(format!("allocating {bytes} bytes"), || {
            stream.alloc_zeros::<u8>(bytes)
        })?;
        let mut run = || {
            driver(format!("copying {bytes} bytes"), || {
                stream.memcpy_dtod(&src, &mut dst)
            })
        };
        self.time(warmup, iters, &mut run)
    }

    /// Runs `f` `warmup` times, then `iters` times between pairs of timing events.
    fn time(
        &self,
        warmup: usize,
        iters: usize,
        f: &mut dyn FnMut() -> Result<(), ReferenceError>,
    ) -> Result<Timing, ReferenceError> {
        if iters == 0 {
            return Err(ReferenceError::NoIterations);
        }
        for _ in 0..warmup {
            f()?;
        }
        let ctx = self.ctx.clone();
        // Timing must be enabled explicitly: `new_event(None)` disables it.
        let new_event = || {
            driver("creating a timing event", || {
                ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            })
        };
        let mut events = Vec::with_capacity(iters);
        for _ in 0..iters {
            let (start, end) = (new_event()?, new_event()?);
            driver("recording an event", || start.record(&self.stream))?;
            f()?;
            driver("recording an event", || end.record(&self.stream))?;
            events.push((start, end));
        }
        driver("synchronize", || self.stream.synchronize())?;
        let mut all = Vec::with_capacity(iters);
        for (start, end) in &events {
            let ms = driver("reading an event time", || start.elapsed_ms(end))?;
            all.push(Duration::from_secs_f64(ms.max(0.0) as f64 / 1e3));
        }
        Timing::from_samples(all).ok_or(ReferenceError::NoIterations)
    }
}
