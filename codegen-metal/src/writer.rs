//! Metal Shading Language's dialect of the C-family writer: its tables and its kernel
//! signature.

use weft_codegen_common::cfamily::{Dialect, FragmentDialect, KernelNames};
use weft_codegen_common::keywords;
use weft_ir::dtype::DType;
use weft_ir::expr::{BinOp, Intrinsic, Scope, ThreadAxis};
use weft_ir::fragment::{FragLayout, Fragment};
use weft_ir::kernel::{Kernel, KernelParam};

/// MSL as Metal compiles it (and as the shim models it for the host compiler).
pub(crate) struct Msl;

const RESERVED: &[&[&str]] = &[keywords::CXX, keywords::MSL];

/// Metal's math functions, overloaded for `float` and `half`.
fn float_intrinsic(f: Intrinsic) -> Option<&'static str> {
    Some(match f {
        Intrinsic::Exp => "exp",
        Intrinsic::Exp2 => "exp2",
        Intrinsic::Log => "log",
        Intrinsic::Sqrt => "sqrt",
        Intrinsic::Rsqrt => "rsqrt",
        // Metal's `tanh` is already the fast one unless precise math is asked for.
        Intrinsic::Tanh | Intrinsic::TanhApprox => "tanh",
        Intrinsic::Sin => "sin",
        Intrinsic::Cos => "cos",
        Intrinsic::Abs => "fabs",
        Intrinsic::Floor => "floor",
        Intrinsic::Ceil => "ceil",
        Intrinsic::Pow => "pow",
        Intrinsic::Fma => "fma",
        // Expanded by the writer before it asks (`contract::expand_sigmoid`); a shuffle
        // is not a math function (`intrinsic` below).
        Intrinsic::Sigmoid | Intrinsic::ShuffleXor => return None,
    })
}

fn address_space(scope: Scope) -> &'static str {
    match scope {
        Scope::Global => "device",
        Scope::Shared => "threadgroup",
        Scope::Local => "thread",
    }
}

impl Dialect for Msl {
    const NAME: &'static str = "MSL";
    const BARRIER: &'static str = "threadgroup_barrier(mem_flags::mem_threadgroup);";
    const UNROLL_PRAGMA: &'static str = "#pragma unroll";

    fn reserved(&self) -> &[&'static [&'static str]] {
        RESERVED
    }

    fn scalar_type(&self, dtype: DType) -> &'static str {
        match dtype {
            DType::F32 => "float",
            DType::F16 => "half",
            DType::I32 => "int",
            DType::U32 => "uint",
            DType::Bool => "bool",
        }
    }

    fn vector_type(&self, dtype: DType, lanes: u32) -> &'static str {
        match (dtype, lanes) {
            (DType::F32, 4) => "float4",
            (DType::F32, _) => "float2",
            (DType::F16, 4) => "half4",
            // No half8: eight halves move as sixteen bytes.
            (DType::F16, 8) => "uint4",
            (DType::F16, _) => "half2",
            (DType::I32, 4) => "int4",
            (DType::I32, _) => "int2",
            (DType::U32, 4) => "uint4",
            (DType::U32, _) => "uint2",
            // A copy moves bytes: bools travel as chars.
            (DType::Bool, 4) => "char4",
            (DType::Bool, _) => "char2",
        }
    }

    fn vector_pointer(&self, scope: Scope, is_const: bool, vector_type: &str) -> String {
        let konst = if is_const { " const" } else { "" };
        format!("({}{konst} {vector_type}*)", address_space(scope))
    }

    fn float_literal(&self, dtype: DType, text: Option<&str>, value: f64) -> String {
        let f32_lit = match text {
            Some(t) => format!("{t}f"),
            None if value.is_nan() => "NAN".into(),
            None if value > 0.0 => "INFINITY".into(),
            None => "-INFINITY".into(),
        };
        match dtype {
            // `half(1.5f)` rather than MSL's `1.5h`: the same value, and the host compiler
            // of the syntax check parses it.
            DType::F16 => format!("half({f32_lit})"),
            _ => f32_lit,
        }
    }

    fn cast(&self, to: DType, _from: DType, inner: &str) -> String {
        format!("({}){inner}", self.scalar_type(to))
    }

    fn intrinsic(&self, f: Intrinsic, dtype: DType, args: &[String]) -> Option<String> {
        if f == Intrinsic::ShuffleXor {
            return matches!(dtype, DType::F32 | DType::I32 | DType::U32)
                .then(|| format!("simd_shuffle_xor({}, (ushort)({}))", args[0], args[1]));
        }
        match dtype {
            DType::F32 | DType::F16 => {
                Some(format!("{}({})", float_intrinsic(f)?, args.join(", ")))
            }
            DType::I32 if f == Intrinsic::Abs => Some(format!("abs({})", args.join(", "))),
            // `abs` of an unsigned value is the value.
            DType::U32 if f == Intrinsic::Abs => Some(format!("({})", args.join(", "))),
            _ => None,
        }
    }

    fn min_max(&self, op: BinOp, dtype: DType, a: &str, b: &str) -> String {
        let name = match (op == BinOp::Min, dtype.is_float()) {
            (true, true) => "fmin",
            (false, true) => "fmax",
            (true, false) => "min",
            (false, false) => "max",
        };
        format!("{name}({a}, {b})")
    }

    fn float_mod(&self, _dtype: DType, a: &str, b: &str) -> String {
        format!("fmod({a}, {b})")
    }

    fn builtin(&self, axis: ThreadAxis) -> String {
        // The kernel's `uint3` parameters are named after CUDA's builtins (TVM does the
        // same), so the spelling matches.
        axis.name().to_string()
    }

    fn shared_decl(&self, ty: &str, name: &str, len: i64, align: Option<u32>) -> String {
        match align {
            Some(a) => format!("alignas({a}) threadgroup {ty} {name}[{len}]"),
            None => format!("threadgroup {ty} {name}[{len}]"),
        }
    }

    fn local_decl(&self, ty: &str, name: &str, len: i64, align: Option<u32>) -> String {
        match align {
            Some(a) => format!("alignas({a}) {ty} {name}[{len}]"),
            None => format!("{ty} {name}[{len}]"),
        }
    }

    fn signature(&self, kernel: &Kernel, names: &KernelNames) -> String {
        let mut params: Vec<String> = kernel
            .params
            .iter()
            .zip(&names.params)
            .enumerate()
            .map(|(i, (p, name))| match p {
                KernelParam::Buffer { buffer, access } => {
                    let ty = self.scalar_type(weft_codegen_common::storage_dtype(buffer));
                    let konst = if access.writes() { "" } else { " const" };
                    format!("device{konst} {ty}* {name} [[buffer({i})]]")
                }
                // Scalars are small constant buffers (`setBytes` on the host side).
                KernelParam::Scalar(v) => {
                    format!(
                        "constant {}& {name} [[buffer({i})]]",
                        self.scalar_type(v.dtype())
                    )
                }
            })
            .collect();
        params.push("uint3 blockIdx [[threadgroup_position_in_grid]]".into());
        params.push("uint3 threadIdx [[thread_position_in_threadgroup]]".into());
        format!(
            "kernel void {}(\n    {}\n)",
            names.kernel,
            params.join(",\n    ")
        )
    }

    fn fragments(&self) -> Option<&dyn FragmentDialect> {
        Some(&Simdgroup)
    }
}

/// Apple's matrix units through `simdgroup_matrix` (MSL 2.3+, Apple7+ and Mac2 GPUs):
/// 8×8 tiles of `half` or `float`, `simdgroup_load`/`simdgroup_store` with a row stride
/// (a column-major tile is loaded with `transpose_matrix = true`) and
/// `simdgroup_multiply_accumulate` (half inputs with a float accumulator allowed).
pub(crate) struct Simdgroup;

impl FragmentDialect for Simdgroup {
    fn unsupported(&self, f: &Fragment) -> Option<String> {
        if f.role() == weft_ir::fragment::FragRole::Rows {
            return Some(format!(
                "`{}` holds an accumulator's rows element by element; weft's simdgroup matrices are opaque",
                f.name()
            ));
        }
        let s = f.shape();
        if (s.m, s.n, s.k) != (8, 8, 8) {
            return Some(format!("Metal's simdgroup matrices are 8×8×8, not {s}"));
        }
        None
    }

    fn decl(&self, f: &Fragment, name: &str) -> String {
        let ty = if f.dtype() == DType::F16 {
            "half"
        } else {
            "float"
        };
        format!("simdgroup_{ty}8x8 {name}[{}]", f.count())
    }

    fn fill(&self, f: &Fragment, tile: &str, value: &str) -> String {
        let ty = if f.dtype() == DType::F16 {
            "half"
        } else {
            "float"
        };
        format!("{tile} = make_filled_simdgroup_matrix<{ty}, 8, 8>({value})")
    }

    fn load(&self, f: &Fragment, tile: &str, ptr: &str, stride: i64, _: Scope) -> String {
        match f.layout() {
            FragLayout::RowMajor => format!("simdgroup_load({tile}, {ptr}, {stride})"),
            FragLayout::ColMajor => {
                format!("simdgroup_load({tile}, {ptr}, {stride}, ulong2(0, 0), true)")
            }
        }
    }

    fn store(&self, f: &Fragment, tile: &str, ptr: &str, stride: i64) -> Result<String, String> {
        Ok(match f.layout() {
            FragLayout::RowMajor => format!("simdgroup_store({tile}, {ptr}, {stride})"),
            FragLayout::ColMajor => {
                format!("simdgroup_store({tile}, {ptr}, {stride}, ulong2(0, 0), true)")
            }
        })
    }

    fn mma(&self, _: &Fragment, d: &str, a: &str, b: &str, c: &str) -> String {
        format!("simdgroup_multiply_accumulate({d}, {a}, {b}, {c})")
    }

    fn tile_align(&self) -> u32 {
        16
    }
}
