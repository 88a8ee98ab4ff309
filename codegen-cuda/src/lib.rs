//! weft's CUDA C emitter: a lowered [`Kernel`] becomes one `extern "C" __global__`
//! function that NVRTC compiles. [`hip`] is the same writer with HIP's dialect table, for
//! AMD GPUs, and [`hipcc`] compiles its output offline.
//!
//! The output follows TVM's CUDA codegen: `__launch_bounds__` with the block size,
//! `__restrict__` buffers (`const` when only read), `__shared__` arrays, per-thread arrays
//! for local buffers, `__syncthreads()`, `#pragma unroll` on unrolled loops, `float4` /
//! `float2` / `half2` copies for vector accesses, and `half` from `<cuda_fp16.h>` where
//! NVRTC can find the CUDA headers, with a stand-in otherwise, because NVRTC itself ships
//! none (see `writer::HALF_PRELUDE` and [`nvrtc::cuda_include_dir`]). Thread and block
//! indices are cast to `int` once at the top (`int threadIdx_x = (int)threadIdx.x;`).
//!
//! Before writing anything, [`emit`] checks the lowering contract and the target's
//! [`TargetLimits`]; a kernel that fails either is an [`EmitError`], never source.
//!
//! [`nvrtc`] compiles the output to PTX offline (no GPU needed) and is what the tests and
//! the runtime use to check it.

pub mod hip;
pub mod hipcc;
mod mma;
pub mod nvrtc;
mod writer;

use weft_codegen_common::cfamily::{Dialect, kernel_names, write_kernel};
use weft_codegen_common::contract::check_lowered;
use weft_codegen_common::{EmitError, check_limits};
use weft_ir::dtype::DType;
use weft_ir::kernel::{Kernel, LoweredFunc};

pub use weft_codegen_common::TargetLimits;

/// Options of the CUDA emitter.
#[derive(Clone, Debug)]
pub struct CudaOptions {
    /// Limits checked before emission; [`TargetLimits::cuda`] by default.
    pub limits: TargetLimits,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions {
            limits: TargetLimits::cuda(),
        }
    }
}

const BACKEND: &str = "CUDA";

/// Shared memory a CUDA kernel can declare statically; more is dynamic shared memory.
pub const STATIC_SHARED_BYTES: u64 = 48 * 1024;

/// The dynamic shared memory `kernel`'s launch must pass: its shared arrays' bytes where
/// they exceed [`STATIC_SHARED_BYTES`] (the emitted source then carves them from one
/// `extern __shared__` array), else 0.
pub fn dynamic_shared_bytes(kernel: &Kernel) -> u32 {
    let (_, bytes) = weft_codegen_common::cfamily::shared_offsets(kernel);
    if bytes > STATIC_SHARED_BYTES {
        bytes.min(u32::MAX as u64) as u32
    } else {
        0
    }
}

fn prelude(f16: bool, fragments: bool) -> String {
    let mut out = String::new();
    // The fragment helpers take `half` pointers.
    if f16 || fragments {
        out.push_str(writer::HALF_PRELUDE);
        out.push('\n');
    }
    if fragments {
        // Tensor cores: inline PTX helpers, no CUDA headers needed.
        out.push_str(mma::PRELUDE);
        out.push('\n');
    }
    out
}

fn check(kernel: &Kernel, opts: &CudaOptions) -> Result<(), EmitError> {
    check_lowered(kernel, BACKEND)?;
    check_limits(kernel, &opts.limits)?;
    Ok(())
}

/// `kernel` as one CUDA translation unit holding one `extern "C" __global__` function
/// named [`entry_point`]`(kernel)`.
pub fn emit(kernel: &Kernel, opts: &CudaOptions) -> Result<String, EmitError> {
    check(kernel, opts)?;
    let mut out = prelude(kernel.uses_dtype(DType::F16), kernel.uses_fragments());
    out.push_str(&write_kernel(&writer::Cuda, kernel)?);
    Ok(out)
}

/// Every kernel of `func` in one translation unit, in launch order.
pub fn emit_lowered(func: &LoweredFunc, opts: &CudaOptions) -> Result<String, EmitError> {
    emit_unit(&writer::Cuda, func, |k| check(k, opts), prelude)
}

/// `func`'s kernels in one translation unit of `dialect`: each checked by `check`, entry
/// points unique, `prelude(f16, fragments)` first.
pub(crate) fn emit_unit<D: Dialect>(
    dialect: &D,
    func: &LoweredFunc,
    check: impl Fn(&Kernel) -> Result<(), EmitError>,
    prelude: impl Fn(bool, bool) -> String,
) -> Result<String, EmitError> {
    let mut seen = std::collections::HashSet::new();
    for k in &func.kernels {
        check(k)?;
        let entry = kernel_names(dialect, k).kernel;
        if !seen.insert(entry.clone()) {
            return Err(EmitError::Invalid {
                kernel: k.name.clone(),
                what: format!(
                    "its entry point `{entry}` repeats in function `{}`",
                    func.name
                ),
            });
        }
    }
    let f16 = func.kernels.iter().any(|k| k.uses_dtype(DType::F16));
    let fragments = func.kernels.iter().any(|k| k.uses_fragments());
    let mut out = prelude(f16, fragments);
    for (i, k) in func.kernels.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&write_kernel(dialect, k)?);
    }
    Ok(out)
}

/// The name of the emitted function: `kernel.name`, unless that is not a valid,
/// non-reserved identifier (lowering never produces such a name), then a sanitised one.
pub fn entry_point(kernel: &Kernel) -> String {
    kernel_names(&writer::Cuda, kernel).kernel
}
