//! weft's HIP emitter, for AMD GPUs: CUDA's C-family writer with HIP's dialect table
//! ([`dialect`]), which differs from CUDA's in four entries. The output is what hipcc
//! compiles ([`crate::hipcc`] does so offline, with no GPU).
//!
//! The prelude includes `<hip/hip_runtime.h>` (and `<hip/hip_fp16.h>` for f16: HIP's
//! `half` has the operators CUDA's has, and the conversions are `__float2half` and
//! `__half2float`). A kernel with matrix fragments is refused: the [`TargetLimits::rocm`]
//! profile has no matrix units, so [`emit`] returns a [`LimitError::MatrixUnits`] naming
//! the target and the fragment.
//!
//! [`TargetLimits::rocm`]: weft_codegen_common::TargetLimits::rocm
//! [`LimitError::MatrixUnits`]: weft_codegen_common::LimitError::MatrixUnits

mod dialect;

use weft_codegen_common::cfamily::{emit_unit, entry_point, write_kernel};
use weft_codegen_common::{EmitError, Emitted, Language, TargetLimits, checked};
use weft_ir::dtype::DType;
use weft_ir::kernel::{Kernel, LoweredFunc};

use dialect::Hip;

/// Options of the HIP emitter.
#[derive(Clone, Debug)]
pub struct HipOptions {
    /// Limits checked before emission; [`TargetLimits::rocm`] by default.
    pub limits: TargetLimits,
}

impl Default for HipOptions {
    fn default() -> Self {
        HipOptions {
            limits: TargetLimits::rocm(),
        }
    }
}

/// The conversions the shared writer spells `weft_f2h`/`weft_h2f` (as for CUDA).
const HALF_PRELUDE: &str = "#include <hip/hip_fp16.h>
__device__ __forceinline__ half weft_f2h(float f) { return __float2half(f); }
__device__ __forceinline__ float weft_h2f(half h) { return __half2float(h); }
";

fn prelude(f16: bool, _fragments: bool) -> String {
    let mut out = String::from("#include <hip/hip_runtime.h>\n");
    if f16 {
        out.push_str(HALF_PRELUDE);
    }
    out.push('\n');
    out
}

/// `kernel` as one HIP translation unit holding one `extern "C" __global__` function (the
/// code object's kernel symbol is its entry point's name).
pub fn emit(kernel: &Kernel, opts: &HipOptions) -> Result<Emitted, EmitError> {
    checked(kernel, Language::Hip, &opts.limits)?;
    let mut source = prelude(kernel.uses_dtype(DType::F16), false);
    source.push_str(&write_kernel(&Hip, kernel)?);
    Ok(Emitted {
        language: Language::Hip,
        source,
        kernels: vec![entry_point(&Hip, kernel)],
    })
}

/// Every kernel of `func` in one translation unit, in launch order: what one hipcc
/// invocation compiles into one code object.
pub fn emit_lowered(func: &LoweredFunc, opts: &HipOptions) -> Result<Emitted, EmitError> {
    emit_unit(&Hip, Language::Hip, func, &opts.limits, prelude)
}
