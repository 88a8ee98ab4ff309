//! HIP's dialect of the C-family writer: CUDA's tables, with the few entries that differ.
//!
//! HIP keeps CUDA's spelling of almost everything a weft kernel uses — `__global__`,
//! `__shared__`, `__syncthreads()`, `threadIdx`/`blockIdx`, `float4`, `__restrict__`,
//! `__int_as_float`, the `*f` math functions — so every entry below but five forwards to
//! [`Cuda`]. What differs: the name, the reserved words, the second argument of
//! `__launch_bounds__`, matrix fragments (none: `nvcuda::wmma` does not exist, and
//! rocWMMA is not emitted), and serial loops over unrolled ones, kept as loops.

use weft_codegen_common::cfamily::{Dialect, FragmentDialect, KernelNames};
use weft_codegen_common::keywords;
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Intrinsic, Scope, ThreadAxis};
use weft_ir::kernel::Kernel;

use crate::writer::{Cuda, global_signature};

/// HIP C++ as hipcc (clang) compiles it for AMD GPUs.
pub(crate) struct Hip;

/// Beyond CUDA's words, the HIP runtime's own globals and macros a kernel must not shadow.
const HIP_WORDS: &[&str] = &[
    "hipThreadIdx_x",
    "hipBlockIdx_x",
    "hipBlockDim_x",
    "hipGridDim_x",
    "warpSize",
    "__HIP__",
    "__HIP_DEVICE_COMPILE__",
];

const RESERVED: &[&[&str]] = &[
    keywords::CXX,
    keywords::CUDA,
    HIP_WORDS,
    &["weft_f2h", "weft_h2f"],
];

/// Threads per wavefront on CDNA (gfx90a); RDNA (gfx1100) runs wave32, where the hint
/// below then asks for fewer waves than CUDA's intent, never more.
const WAVE: u64 = 64;
/// SIMDs (execution units) per compute unit, on CDNA and RDNA alike.
const SIMDS_PER_CU: u64 = 4;

impl Dialect for Hip {
    const NAME: &'static str = "HIP";
    const BARRIER: &'static str = Cuda::BARRIER;
    const UNROLL_PRAGMA: &'static str = Cuda::UNROLL_PRAGMA;
    /// LLVM's AMDGPU backend unrolls loops that touch shared memory far past its usual
    /// threshold, and then issues every load of the unrolled body first: a loop of two
    /// trips over 8 unrolled k sub-steps became 16 hoisted sub-steps and 72 spilled VGPRs
    /// for gfx1100 (49 VGPRs and none kept as a loop; hipcc 5.2). A loop the schedule
    /// unrolled inside is one it chose to keep. (Loops with a barrier are left alone: the
    /// pragma on a main k loop crashes clang 15's gfx90a backend in 5 fp32 configs,
    /// "Operand has incorrect register class", and copies cannot hoist past a barrier.)
    const KEEP_LOOP_PRAGMA: Option<&'static str> = Some("#pragma unroll 1");

    fn reserved(&self) -> &[&'static [&'static str]] {
        RESERVED
    }
    /// HIP spells CUDA's: `__threadfence()` is a device-scope (agent) fence there too.
    fn device_fence(&self) -> Option<&'static str> {
        Cuda.device_fence()
    }
    fn atomic_add(&self, ptr: &str, value: &str) -> Option<String> {
        Cuda.atomic_add(ptr, value)
    }
    fn scalar_type(&self, dtype: DType) -> &'static str {
        Cuda.scalar_type(dtype)
    }
    fn vector_type(&self, dtype: DType, lanes: u32) -> &'static str {
        Cuda.vector_type(dtype, lanes)
    }
    fn vector_pointer(&self, scope: Scope, is_const: bool, vector_type: &str) -> String {
        Cuda.vector_pointer(scope, is_const, vector_type)
    }
    fn float_literal(&self, dtype: DType, text: Option<&str>, value: f64) -> String {
        Cuda.float_literal(dtype, text, value)
    }
    fn cast(&self, to: DType, from: DType, inner: &str) -> String {
        Cuda.cast(to, from, inner)
    }
    fn intrinsic(&self, f: Intrinsic, dtype: DType, args: &[String]) -> Option<String> {
        // AMD GPUs have no tanh instruction: `tanhf` for the approximate one too.
        let f = match f {
            Intrinsic::TanhApprox => Intrinsic::Tanh,
            // HIP's shuffle spans the wavefront and takes no mask of lanes.
            Intrinsic::ShuffleXor => {
                return matches!(dtype, DType::F32 | DType::I32 | DType::U32)
                    .then(|| format!("__shfl_xor({}, {})", args[0], args[1]));
            }
            f => f,
        };
        Cuda.intrinsic(f, dtype, args)
    }
    fn min_max(&self, op: BinOp, dtype: DType, a: &str, b: &str) -> String {
        Cuda.min_max(op, dtype, a, b)
    }
    fn float_mod(&self, dtype: DType, a: &str, b: &str) -> String {
        Cuda.float_mod(dtype, a, b)
    }
    fn builtin(&self, axis: ThreadAxis) -> String {
        Cuda.builtin(axis)
    }
    fn shared_decl(&self, ty: &str, name: &str, len: i64, align: Option<u32>) -> String {
        Cuda.shared_decl(ty, name, len, align)
    }
    fn local_decl(&self, ty: &str, name: &str, len: i64, align: Option<u32>) -> String {
        Cuda.local_decl(ty, name, len, align)
    }

    /// HIP's `__launch_bounds__(threads, n)` passes `n` to `amdgpu_waves_per_eu`: it is a
    /// minimum of *waves per SIMD*, not CUDA's blocks per multiprocessor. The kernel's hint
    /// (`min_blocks_per_sm` blocks resident at once) becomes the waves those blocks put on
    /// each of a compute unit's four SIMDs.
    fn signature(&self, kernel: &Kernel, names: &KernelNames) -> String {
        let threads = kernel.threads_per_block();
        let bounds = match kernel.min_blocks_per_sm as u64 {
            0 => threads.to_string(),
            blocks => {
                let waves = (blocks * threads.div_ceil(WAVE)).div_ceil(SIMDS_PER_CU);
                format!("{threads}, {}", waves.max(1))
            }
        };
        global_signature(self, kernel, names, &bounds)
    }

    fn fragments(&self) -> Option<&dyn FragmentDialect> {
        None
    }
}
