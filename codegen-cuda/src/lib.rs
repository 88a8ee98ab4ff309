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
mod wgmma;
mod writer;

use weft_codegen_common::cfamily::{emit_unit, entry_point, write_kernel};
use weft_codegen_common::{EmitError, Emitted, Language, checked};
use weft_ir::dtype::DType;
use weft_ir::expr::Intrinsic;
use weft_ir::func::GridControl;
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

/// Shared memory a CUDA kernel can declare statically; more is dynamic shared memory
/// (the emitted source carves it from one `extern __shared__` array, and the
/// [`EntryPoint`](weft_codegen_common::EntryPoint) says how much the launch passes).
pub const STATIC_SHARED_BYTES: u64 = 48 * 1024;

/// What a translation unit's kernels use beyond what every unit declares.
#[derive(Clone, Copy, Debug, Default)]
struct Uses {
    /// Whether a kernel calls an approximate intrinsic.
    approx: bool,
    /// Whether a kernel prefetches or triggers its dependents ([`writer::PDL_PRELUDE`]).
    pdl: bool,
}

impl Uses {
    fn of<'k>(kernels: impl IntoIterator<Item = &'k Kernel>) -> Uses {
        let mut uses = Uses::default();
        for k in kernels {
            uses.approx |= k.uses_intrinsic(Intrinsic::TanhApprox);
            uses.pdl |= k.uses_prefetch() || k.uses_grid(GridControl::LaunchDependents);
        }
        uses
    }
}

/// What a translation unit declares before its kernels: the grid-dependency wait every
/// kernel starts with (or places), then what the kernels use. `hopper`: the `wgmma`
/// widths of the unit's kernels, `None` where none uses Hopper's operations.
fn prelude(f16: bool, fragments: bool, hopper: Option<&[u32]>, uses: Uses) -> String {
    let mut out = String::from(writer::GRID_DEPENDENCY_PRELUDE);
    out.push('\n');
    if uses.pdl {
        out.push_str(writer::PDL_PRELUDE);
        out.push('\n');
    }
    let approx = uses.approx;
    if approx {
        out.push_str(writer::APPROX_PRELUDE);
        out.push('\n');
    }
    // The fragment helpers take `half` pointers.
    if f16 || fragments || hopper.is_some() {
        out.push_str(writer::HALF_PRELUDE);
        out.push('\n');
    }
    if fragments {
        // Tensor cores: inline PTX helpers, no CUDA headers needed.
        out.push_str(mma::PRELUDE);
        out.push('\n');
    }
    if let Some(widths) = hopper {
        out.push_str(&wgmma::prelude(widths));
        out.push('\n');
    }
    out
}

/// The `wgmma` widths of `kernels` if any of them uses Hopper's operations.
fn hopper<'k>(kernels: impl IntoIterator<Item = &'k Kernel>) -> Option<Vec<u32>> {
    let mut any = false;
    let mut widths = Vec::new();
    for k in kernels {
        any |= k.uses_hopper();
        widths.extend(k.wgmma_widths());
    }
    widths.sort_unstable();
    widths.dedup();
    any.then_some(widths)
}

/// `kernel` as one CUDA translation unit holding one `extern "C" __global__` function,
/// checked once against the lowering contract and `opts.limits`.
pub fn emit(kernel: &Kernel, opts: &CudaOptions) -> Result<Emitted, EmitError> {
    checked(kernel, Language::Cuda, &opts.limits)?;
    let hop = hopper([kernel]);
    let mut source = prelude(
        kernel.uses_dtype(DType::F16),
        kernel.uses_fragments(),
        hop.as_deref(),
        Uses::of([kernel]),
    );
    source.push_str(&write_kernel(&writer::Cuda, kernel)?);
    Ok(Emitted {
        language: Language::Cuda,
        source,
        kernels: vec![entry_point(&writer::Cuda, kernel)],
    })
}

/// Every kernel of `func` in one translation unit, in launch order.
pub fn emit_lowered(func: &LoweredFunc, opts: &CudaOptions) -> Result<Emitted, EmitError> {
    let hop = hopper(&func.kernels);
    let uses = Uses::of(&func.kernels);
    emit_unit(
        &writer::Cuda,
        Language::Cuda,
        func,
        &opts.limits,
        |f16, frags| prelude(f16, frags, hop.as_deref(), uses),
    )
}
