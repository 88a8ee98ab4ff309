//! Reference rows for benchmarks on CUDA, in weft's own process: cuBLAS SGEMM and HGEMM
//! ([`blas`]), cuDNN convolution — fp32 NCHW, fp16 NHWC or NCHW, grouped for depthwise,
//! with or without a fused bias and ReLU ([`dnn`]) — and a device-to-device copy (the
//! bandwidth a memory-bound kernel can hope for). They are timed exactly like
//! [`crate::cuda::CudaDevice`] times weft's kernels (`stream_timing`): kernel time from
//! event pairs around back-to-back runs, the host's round trip apart.
//!
//! cudarc loads libcublas and libcudnn on first use and panics when they are absent, so
//! [`CudaReference`] probes for libcuda, and for each library before its first use, and
//! reports absence as [`ReferenceError`] values whose [`ReferenceError::is_unavailable`]
//! is true (a benchmark's reference row then says why); calls into cudarc also run under
//! `catch_unwind`.
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

pub mod blas;
pub mod dnn;

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::cublas::result::CublasError;
use cudarc::cudnn::{Cudnn, CudnnError};
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use thiserror::Error;

use crate::cuda::time_runs;
use crate::cuda::{CudaError, candidates, guard, open_context, probe_driver};
use crate::target::Target;
use crate::timing::Timing;

pub use dnn::{ConvLayout, ConvProblem, ConvResult};

const CUBLAS_HINT: &str = "cuBLAS comes with the CUDA toolkit or the `nvidia-cublas` pip \
                           wheel (its `nvidia/cu13/lib` folder on LD_LIBRARY_PATH)";
const CUDNN_HINT: &str = "cuDNN comes with the `nvidia-cudnn-cu13` (or -cu12) pip wheel, \
                          PyTorch's wheels, or NVIDIA's cuDNN package (its `lib` folder on \
                          LD_LIBRARY_PATH)";

/// Why a reference measurement could not be taken.
#[derive(Debug, Error)]
pub enum ReferenceError {
    /// The target is not a `cuda` one.
    #[error("reference rows need a `cuda` target, got `{target}`")]
    NotCuda { target: String },
    /// libcuda, a device, or a driver call.
    #[error(transparent)]
    Cuda(#[from] CudaError),
    #[error("{lib} not found (tried {}); {hint}", tried.join(", "))]
    LibraryMissing {
        lib: &'static str,
        tried: Vec<String>,
        hint: &'static str,
    },
    #[error("cuBLAS, {op}: {source}")]
    Cublas {
        op: String,
        #[source]
        source: CublasError,
    },
    #[error("cuDNN, {op}: {source}")]
    Cudnn {
        op: String,
        #[source]
        source: CudnnError,
    },
    #[error("GEMM {m}x{n}x{k}: {what}")]
    BadGemm {
        m: usize,
        n: usize,
        k: usize,
        what: String,
    },
    #[error("convolution {problem}: {what}")]
    BadConv { problem: String, what: String },
    #[error("cuDNN has no algorithm for {problem} here: {tried}")]
    NoAlgorithm { problem: String, tried: String },
    #[error("cannot time zero iterations")]
    NoIterations,
}

impl ReferenceError {
    /// True when a library or device is absent here, as opposed to a failure of one that
    /// is present.
    pub fn is_unavailable(&self) -> bool {
        match self {
            ReferenceError::NotCuda { .. } | ReferenceError::LibraryMissing { .. } => true,
            ReferenceError::Cuda(e) => e.is_unavailable(),
            _ => false,
        }
    }
}

/// A driver call under [`guard`], naming the operation in its error.
pub(crate) fn driver<T>(
    op: impl Into<String>,
    f: impl FnOnce() -> Result<T, DriverError>,
) -> Result<T, ReferenceError> {
    Ok(crate::cuda::driver(op, f)?)
}

/// A cuBLAS call under [`guard`], naming the operation in its error.
pub(crate) fn cublas<T>(
    op: impl Into<String>,
    f: impl FnOnce() -> Result<T, CublasError>,
) -> Result<T, ReferenceError> {
    let op = op.into();
    guard(&op, f)?.map_err(|source| ReferenceError::Cublas { op, source })
}

/// A cuDNN call under [`guard`], naming the operation in its error.
pub(crate) fn cudnn<T>(
    op: impl Into<String>,
    f: impl FnOnce() -> Result<T, CudnnError>,
) -> Result<T, ReferenceError> {
    let op = op.into();
    guard(&op, f)?.map_err(|source| ReferenceError::Cudnn { op, source })
}

/// Checks that libcublas can be loaded (under cudarc's names).
pub fn probe_cublas() -> Result<(), ReferenceError> {
    // SAFETY: only tries to open the library with `libloading` under cudarc's names.
    let present = guard("probing for libcublas", || unsafe {
        cudarc::cublas::sys::is_culib_present()
    })?;
    present.then_some(()).ok_or(ReferenceError::LibraryMissing {
        lib: "libcublas",
        tried: candidates("cublas"),
        hint: CUBLAS_HINT,
    })
}

/// Checks that libcudnn can be loaded (under cudarc's names).
pub fn probe_cudnn() -> Result<(), ReferenceError> {
    // SAFETY: only tries to open the library with `libloading` under cudarc's names.
    let present = guard("probing for libcudnn", || unsafe {
        cudarc::cudnn::sys::is_culib_present()
    })?;
    present.then_some(()).ok_or(ReferenceError::LibraryMissing {
        lib: "libcudnn",
        tried: candidates("cudnn"),
        hint: CUDNN_HINT,
    })
}

/// The reference kernels on the CUDA device a target names.
pub struct CudaReference {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    /// Created on first use, so that a machine without cuBLAS or cuDNN still gets the
    /// rows of the other library and the copy rows.
    blas: Option<CudaBlas>,
    dnn: Option<Arc<Cudnn>>,
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
        let ctx = open_context(*device)?;
        // One stream, so cudarc's per-buffer events (for several streams) are not needed;
        // they would also be recorded into captured graphs.
        // SAFETY: every buffer here is allocated, used and freed on `stream`.
        unsafe { ctx.disable_event_tracking() };
        let name = driver("cuDeviceGetName", || ctx.name())?;
        // Not the legacy default stream: it cannot be captured into a graph.
        let stream = driver("creating a stream", || ctx.new_stream())?;
        Ok(CudaReference {
            ctx,
            stream,
            name,
            blas: None,
            dnn: None,
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

    /// The cuDNN handle, created (after a probe) on first use.
    fn dnn(&mut self) -> Result<Arc<Cudnn>, ReferenceError> {
        if let Some(d) = &self.dnn {
            return Ok(d.clone());
        }
        probe_cudnn()?;
        let stream = self.stream.clone();
        let d = cudnn("creating a handle", || Cudnn::new(stream))?;
        self.dnn = Some(d.clone());
        Ok(d)
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

    /// Times `f` (which enqueues one run on the stream) as weft's kernels are timed.
    fn time(
        &self,
        warmup: usize,
        iters: usize,
        f: &mut dyn FnMut() -> Result<(), ReferenceError>,
    ) -> Result<Timing, ReferenceError> {
        time_runs(&self.ctx, &self.stream, warmup, iters, f)?.ok_or(ReferenceError::NoIterations)
    }
}
