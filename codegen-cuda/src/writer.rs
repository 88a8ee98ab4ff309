//! CUDA's dialect of the C-family writer: its tables and its kernel signature.

use weft_codegen_common::cfamily::{Dialect, FragmentDialect, KernelNames};
use weft_codegen_common::keywords;
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Intrinsic, Scope, ThreadAxis};
use weft_ir::kernel::{Kernel, KernelParam};

/// CUDA C++ as NVRTC compiles it.
pub(crate) struct Cuda;

const RESERVED: &[&[&str]] = &[
    keywords::CXX,
    keywords::CUDA,
    &[
        "weft_f2h",
        "weft_h2f",
        "weft_tanh_approx",
        weft_codegen_common::cfamily::DYNAMIC_SHARED,
    ],
];

/// The single-precision math functions: the accurate ones, not `__expf` and kin (the
/// interpreter and the other backends compute the accurate results), except where the IR
/// itself asks for an approximation ([`Intrinsic::TanhApprox`]).
fn f32_intrinsic(f: Intrinsic) -> Option<&'static str> {
    Some(match f {
        Intrinsic::Exp => "expf",
        Intrinsic::Exp2 => "exp2f",
        Intrinsic::Log => "logf",
        Intrinsic::Sqrt => "sqrtf",
        Intrinsic::Rsqrt => "rsqrtf",
        Intrinsic::Tanh => "tanhf",
        // `tanh.approx.f32` on sm_75 and later ([`APPROX_PRELUDE`]).
        Intrinsic::TanhApprox => "weft_tanh_approx",
        Intrinsic::Sin => "sinf",
        Intrinsic::Cos => "cosf",
        Intrinsic::Abs => "fabsf",
        Intrinsic::Floor => "floorf",
        Intrinsic::Ceil => "ceilf",
        Intrinsic::Pow => "powf",
        Intrinsic::Fma => "fmaf",
        // Expanded by the writer before it asks (`contract::expand_sigmoid`); a shuffle
        // is not a math function (`intrinsic` below).
        Intrinsic::Sigmoid | Intrinsic::ShuffleXor => return None,
    })
}

/// The `half` type for every unit that uses f16: `<cuda_fp16.h>` where the CUDA headers
/// can be found ([`crate::nvrtc`] passes their folder to NVRTC: a toolkit's, or the
/// `nvidia-cuda-runtime` wheel's), else a stand-in, because NVRTC itself ships no headers
/// and a kernel must compile wherever NVRTC loads. The stand-in converts with PTX `cvt`
/// (round to nearest even) and does arithmetic in `float` rounded once, which gives the
/// same results as cuda_fp16's operators for `+ - * /` (float carries more than twice
/// binary16's precision).
pub(crate) const HALF_PRELUDE: &str = r#"#if defined(__has_include) && __has_include(<cuda_fp16.h>)
#include <cuda_fp16.h>
__device__ __forceinline__ half weft_f2h(float f) { return __float2half_rn(f); }
__device__ __forceinline__ float weft_h2f(half h) { return __half2float(h); }
#else
// binary16 without cuda_fp16.h: 16 bits, converted by PTX cvt, arithmetic in float.
struct __align__(2) half { unsigned short bits; };
struct __align__(4) half2 { half x, y; };
__device__ __forceinline__ half weft_f2h(float f) { half h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f)); return h; }
__device__ __forceinline__ float weft_h2f(half h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f; }
__device__ __forceinline__ half operator+(half a, half b) { return weft_f2h(weft_h2f(a) + weft_h2f(b)); }
__device__ __forceinline__ half operator-(half a, half b) { return weft_f2h(weft_h2f(a) - weft_h2f(b)); }
__device__ __forceinline__ half operator*(half a, half b) { return weft_f2h(weft_h2f(a) * weft_h2f(b)); }
__device__ __forceinline__ half operator/(half a, half b) { return weft_f2h(weft_h2f(a) / weft_h2f(b)); }
__device__ __forceinline__ half operator-(half a) { a.bits ^= 0x8000u; return a; }
__device__ __forceinline__ bool operator==(half a, half b) { return weft_h2f(a) == weft_h2f(b); }
__device__ __forceinline__ bool operator!=(half a, half b) { return weft_h2f(a) != weft_h2f(b); }
__device__ __forceinline__ bool operator<(half a, half b) { return weft_h2f(a) < weft_h2f(b); }
__device__ __forceinline__ bool operator<=(half a, half b) { return weft_h2f(a) <= weft_h2f(b); }
__device__ __forceinline__ bool operator>(half a, half b) { return weft_h2f(a) > weft_h2f(b); }
__device__ __forceinline__ bool operator>=(half a, half b) { return weft_h2f(a) >= weft_h2f(b); }
#endif
"#;

/// The helpers of the IR's approximate intrinsics, for units that call them:
/// `tanh.approx.f32` (sm_75 and later; `tanhf` below), about 2^-11 relative error
/// ([`Intrinsic::TanhApprox`]).
pub(crate) const APPROX_PRELUDE: &str = r#"// tanh to about 2^-11 relative error (weft's tanh_approx): one MUFU op on sm_75+.
__device__ __forceinline__ float weft_tanh_approx(float x) {
#if __CUDA_ARCH__ >= 750
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return tanhf(x);
#endif
}
"#;

/// The wait every kernel starts with (programmatic dependent launch, sm_90 and later).
/// The runtime launches weft's kernels with the attribute that lets a kernel launch as
/// soon as the blocks of the one before it have exited, without waiting for that grid's
/// completion to be processed; the wait keeps it right: each kernel waits, before
/// touching memory, until the previous one has finished and its writes are visible.
/// Launched without the attribute (an older GPU, `WEFT_PDL=0`), it returns at once.
///
/// No kernel triggers its dependents early (`griddepcontrol.launch_dependents`) unless
/// its template says so ([`PDL_PRELUDE`]): with an early trigger the next kernel's blocks
/// are placed while this one still holds the multiprocessors, and grids sized in waves
/// of blocks ran slower (measured on an H100: ResNet-50 fp32 742 → 920 µs with it,
/// 720 µs without; `docs/timing.md`).
pub(crate) const GRID_DEPENDENCY_PRELUDE: &str = r#"// Programmatic dependent launch (sm_90+): wait for the kernel before this one to finish
// and its writes to be visible. A no-op otherwise.
__device__ __forceinline__ void weft_grid_dependency() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
"#;

/// The call of [`GRID_DEPENDENCY_PRELUDE`]'s function a kernel starts with.
pub(crate) const GRID_DEPENDENCY: &str = "weft_grid_dependency();";

/// The helpers of kernels that place their own programmatic-dependent-launch
/// instructions (`KStmt::Prefetch`, `KStmt::Grid`), written only in units that use them
/// so that other units stay as they were. The prefetch converts the generic address to a
/// global one first: `prefetch.global` takes a global address, and a kernel's buffer
/// parameters are global memory.
pub(crate) const PDL_PRELUDE: &str = r#"// Programmatic dependent launch (sm_90+): let the next kernel launch now; it still
// waits for this one to finish at its own wait. A no-op otherwise.
__device__ __forceinline__ void weft_launch_dependents() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// Brings the line holding *p (global memory) into L2; changes no value.
__device__ __forceinline__ void weft_prefetch_l2(const void* p) {
    asm volatile("{ .reg .u64 g; cvta.to.global.u64 g, %0; prefetch.global.L2 [g]; }" :: "l"(p));
}
// Brings the n bytes from p on (16-byte aligned, n a multiple of 16) into L2 as one bulk
// request of the copy engine (sm_90+), else the line holding *p; changes no value.
__device__ __forceinline__ void weft_prefetch_l2_bulk(const void* p, unsigned n) {
#if __CUDA_ARCH__ >= 900
    asm volatile("{ .reg .u64 g; cvta.to.global.u64 g, %0; cp.async.bulk.prefetch.L2.global [g], %1; }" :: "l"(p), "r"(n) : "memory");
#else
    weft_prefetch_l2(p);
#endif
}
"#;

/// `half` math goes through `float`: one rounding at the end, the same functions on every
/// architecture.
fn through_float(call: &str) -> String {
    format!("weft_f2h({call})")
}

fn to_float(args: &[String]) -> Vec<String> {
    args.iter().map(|a| format!("weft_h2f({a})")).collect()
}

impl Dialect for Cuda {
    const NAME: &'static str = "CUDA";
    const BARRIER: &'static str = "__syncthreads();";
    const UNROLL_PRAGMA: &'static str = "#pragma unroll";

    fn grid_dependency(&self) -> Option<&'static str> {
        Some(GRID_DEPENDENCY)
    }

    fn launch_dependents(&self) -> Option<&'static str> {
        Some("weft_launch_dependents();")
    }

    fn prefetch(&self, address: &str) -> Option<String> {
        Some(format!("weft_prefetch_l2({address});"))
    }

    fn prefetch_bulk(&self, address: &str, bytes: u32) -> Option<String> {
        Some(format!("weft_prefetch_l2_bulk({address}, {bytes}u);"))
    }

    /// `cp.async` (sm_80 and later; the synchronous copy below that, chosen when NVRTC
    /// compiles for the device): 16-byte copies bypass L1 (`.cg`), smaller ones cannot.
    /// No `memory` clobber on the copy: it would fence every shared load around it (the
    /// fragment loads of the step being computed); the wait before the barrier has one.
    fn async_copy(&self, dst: &str, src: &str, bytes: u32, sync: &str) -> Option<Vec<String>> {
        let cache = match bytes {
            16 => "cg",
            4 | 8 => "ca",
            _ => return None,
        };
        Some(vec![
            "#if __CUDA_ARCH__ >= 800".to_string(),
            format!(
                "asm volatile(\"{{ .reg .u64 s; cvta.to.shared.u64 s, %0; cp.async.{cache}.shared.global [s], [%1], {bytes}; }}\" :: \"l\"({dst}), \"l\"({src}));"
            ),
            "#else".to_string(),
            sync.to_string(),
            "#endif".to_string(),
        ])
    }

    fn async_wait(&self, pending: u32) -> Vec<String> {
        let wait = match pending {
            0 => "asm volatile(\"cp.async.wait_all;\" ::: \"memory\");".to_string(),
            n => format!(
                "asm volatile(\"cp.async.commit_group;\\n\\tcp.async.wait_group {n};\" ::: \"memory\");"
            ),
        };
        vec![
            "#if __CUDA_ARCH__ >= 800".to_string(),
            wait,
            "#endif".to_string(),
        ]
    }

    fn proxy_fence(&self) -> Option<&'static str> {
        Some("asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");")
    }

    fn device_fence(&self) -> Option<&'static str> {
        Some("__threadfence();")
    }

    /// `atomicAdd` has `int` and `unsigned int` forms: the counter's type picks one.
    fn atomic_add(&self, ptr: &str, value: &str) -> Option<String> {
        Some(format!("atomicAdd({ptr}, {value})"))
    }

    fn swizzled_index(&self, index: &str) -> Option<String> {
        Some(format!("weft_swz128({index})"))
    }

    /// Past 48 KiB a block's shared memory must be dynamic (and the function opted in:
    /// the runtime sets `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    fn dynamic_shared(&self, bytes: u64) -> Option<String> {
        (bytes > crate::STATIC_SHARED_BYTES).then(|| {
            format!(
                "extern __shared__ __align__(1024) unsigned char {}[]",
                weft_codegen_common::cfamily::DYNAMIC_SHARED
            )
        })
    }

    fn reserved(&self) -> &[&'static [&'static str]] {
        RESERVED
    }

    fn scalar_type(&self, dtype: DType) -> &'static str {
        match dtype {
            DType::F32 => "float",
            DType::F16 => "half",
            DType::I32 => "int",
            DType::U32 => "unsigned int",
            DType::Bool => "bool",
        }
    }

    fn vector_type(&self, dtype: DType, lanes: u32) -> &'static str {
        match (dtype, lanes) {
            (DType::F32, 4) => "float4",
            (DType::F32, _) => "float2",
            (DType::I32, 4) => "int4",
            (DType::I32, _) => "int2",
            (DType::U32, 4) => "uint4",
            (DType::U32, _) => "uint2",
            // CUDA has no half4: four halves move as eight bytes.
            (DType::F16, 4) => "uint2",
            (DType::F16, 8) => "uint4",
            (DType::F16, _) => "half2",
            (DType::Bool, 4) => "char4",
            (DType::Bool, _) => "char2",
        }
    }

    fn vector_pointer(&self, _scope: Scope, is_const: bool, vector_type: &str) -> String {
        if is_const {
            format!("(const {vector_type}*)")
        } else {
            format!("({vector_type}*)")
        }
    }

    fn float_literal(&self, dtype: DType, text: Option<&str>, value: f64) -> String {
        let f32_lit = match text {
            Some(t) => format!("{t}f"),
            None if value.is_nan() => "__int_as_float(0x7fc00000)".into(),
            None if value > 0.0 => "__int_as_float(0x7f800000)".into(),
            None => "-__int_as_float(0x7f800000)".into(),
        };
        match dtype {
            DType::F16 => through_float(&f32_lit),
            _ => f32_lit,
        }
    }

    fn cast(&self, to: DType, from: DType, inner: &str) -> String {
        match (from, to) {
            (DType::F32, DType::F16) => format!("weft_f2h({inner})"),
            (_, DType::F16) => format!("weft_f2h((float){inner})"),
            (DType::F16, DType::F32) => format!("weft_h2f({inner})"),
            (DType::F16, to) => format!("({})weft_h2f({inner})", self.scalar_type(to)),
            (_, to) => format!("({}){inner}", self.scalar_type(to)),
        }
    }

    fn intrinsic(&self, f: Intrinsic, dtype: DType, args: &[String]) -> Option<String> {
        if f == Intrinsic::ShuffleXor {
            // Every lane of the warp takes part: the checker holds a shuffling kernel to
            // whole warps, and the IR to uniform control flow.
            return matches!(dtype, DType::F32 | DType::I32 | DType::U32)
                .then(|| format!("__shfl_xor_sync(0xffffffffu, {}, {})", args[0], args[1]));
        }
        match dtype {
            DType::F32 => Some(format!("{}({})", f32_intrinsic(f)?, args.join(", "))),
            DType::F16 => Some(through_float(&format!(
                "{}({})",
                f32_intrinsic(f)?,
                to_float(args).join(", ")
            ))),
            DType::I32 if f == Intrinsic::Abs => Some(format!("abs({})", args.join(", "))),
            // `abs` of an unsigned value is the value (C++'s `abs(unsigned)` is ambiguous).
            DType::U32 if f == Intrinsic::Abs => Some(format!("({})", args.join(", "))),
            _ => None,
        }
    }

    fn min_max(&self, op: BinOp, dtype: DType, a: &str, b: &str) -> String {
        let min = op == BinOp::Min;
        match dtype {
            DType::F32 => format!("{}({a}, {b})", if min { "fminf" } else { "fmaxf" }),
            DType::F16 => through_float(&format!(
                "{}(weft_h2f({a}), weft_h2f({b}))",
                if min { "fminf" } else { "fmaxf" }
            )),
            _ => format!("{}({a}, {b})", if min { "min" } else { "max" }),
        }
    }

    fn float_mod(&self, dtype: DType, a: &str, b: &str) -> String {
        match dtype {
            DType::F16 => through_float(&format!("fmodf(weft_h2f({a}), weft_h2f({b}))")),
            _ => format!("fmodf({a}, {b})"),
        }
    }

    fn builtin(&self, axis: ThreadAxis) -> String {
        axis.name().to_string()
    }

    fn shared_decl(&self, ty: &str, name: &str, len: i64, align: Option<u32>) -> String {
        match align {
            Some(a) => format!("__shared__ __align__({a}) {ty} {name}[{len}]"),
            None => format!("__shared__ {ty} {name}[{len}]"),
        }
    }

    fn local_decl(&self, ty: &str, name: &str, len: i64, align: Option<u32>) -> String {
        match align {
            Some(a) => format!("__align__({a}) {ty} {name}[{len}]"),
            None => format!("{ty} {name}[{len}]"),
        }
    }

    fn signature(&self, kernel: &Kernel, names: &KernelNames) -> String {
        // `(threads, blocks)`: the kernel's hint caps registers so that `blocks` blocks
        // fit on a multiprocessor.
        let bounds = match kernel.min_blocks_per_sm {
            0 => kernel.threads_per_block().to_string(),
            n => format!("{}, {n}", kernel.threads_per_block()),
        };
        global_signature(self, kernel, names, &bounds)
    }

    fn fragments(&self) -> Option<&dyn FragmentDialect> {
        Some(&crate::mma::MmaSync)
    }
}

/// `extern "C" __global__ void __launch_bounds__(bounds) name(params)`: the signature CUDA
/// and HIP share (they differ only in what `bounds` says).
pub(crate) fn global_signature<D: Dialect>(
    d: &D,
    kernel: &Kernel,
    names: &KernelNames,
    bounds: &str,
) -> String {
    let params: Vec<String> = kernel
        .params
        .iter()
        .zip(&names.params)
        .map(|(p, name)| match p {
            // Distinct buffer parameters never alias (the Kernel contract).
            KernelParam::Buffer { buffer, access } => {
                let ty = d.scalar_type(weft_codegen_common::storage_dtype(buffer));
                let konst = if access.writes() { "" } else { "const " };
                format!("{konst}{ty}* __restrict__ {name}")
            }
            KernelParam::Scalar(v) => format!("{} {name}", d.scalar_type(v.dtype())),
        })
        // TMA tensor maps, by value in parameter space (built by the launch).
        .chain(
            names
                .tensor_maps
                .iter()
                .map(|name| format!("const __grid_constant__ weft_tensor_map {name}")),
        )
        .collect();
    format!(
        "extern \"C\" __global__ void __launch_bounds__({bounds}) {}({})",
        names.kernel,
        params.join(", ")
    )
}
