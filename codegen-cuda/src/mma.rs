//! Tensor cores through inline PTX: an m16n16k16 fragment is a pair of
//! `mma.sync.aligned.m16n8k16` multiplies (sm_80 and later), loaded from shared memory with
//! `ldmatrix` (one `LDSM.x4` per A or B tile) where the tile's rows are 16-byte aligned,
//! element by element otherwise (global memory, odd strides).
//!
//! `nvcuda::wmma` was the first spelling; NVCC lowers its loads to four 32-bit `LDS` per
//! tile and hides the accumulator's layout, so weft writes the PTX itself (as CUTLASS's
//! sm80 kernels do). The register layouts are PTX's for `m16n8k16` (the ISA's "Matrix
//! Fragments for mma.m16n8k16"); with `g = lane / 4` and `t = 2·(lane % 4)`:
//!
//! ```text
//! A (16×16, 4 × b32):  r[h + 2·kb] = A[g + 8h][t + 8kb .. +1]          h, kb ∈ {0, 1}
//! B (16×16, 4 × b32):  r[2·nb + kh] = B[t + 8kh .. +1][8nb + g]        nb, kh ∈ {0, 1}
//! C f32 (8 × f32):     c[4·nb + 2h + e] = C[g + 8h][8nb + t + e]        e ∈ {0, 1}
//! C f16 (4 × b32):     c[2·nb + h] = C[g + 8h][8nb + t .. +1]
//! ```
//!
//! Each fragment operation is one call of a helper from [`PRELUDE`], so the emitted kernel
//! reads like the IR (`weft_mma_f32(acc[t], a_frag[i], b_frag[j], acc[t])`).

use weft_codegen_common::cfamily::{ElementMap, FragmentDialect};
use weft_ir::dtype::DType;
use weft_ir::expr::Scope;
use weft_ir::fragment::{FragLayout, FragRole, Fragment, MmaShape};

/// The one fragment shape: two `m16n8k16` multiplies side by side.
pub(crate) const SHAPE: MmaShape = MmaShape {
    m: 16,
    n: 16,
    k: 16,
};

/// The helpers every kernel with fragments includes (after the `half` prelude).
pub(crate) const PRELUDE: &str = r#"// Tensor cores: m16n16k16 tiles as two mma.sync.m16n8k16 (sm_80+); layouts in weft's mma.rs.
#define WEFT_UNROLL _Pragma("unroll")
__device__ __forceinline__ unsigned weft_lane() { unsigned l; asm("mov.u32 %0, %%laneid;" : "=r"(l)); return l; }
// Four 8x8 b16 matrices from shared memory; `row` is the row this lane addresses.
__device__ __forceinline__ void weft_ldsm(unsigned* r, const half* row, bool trans) {
    if (trans) {
        asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %4; ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [s]; }" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"(row));
    } else {
        asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %4; ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [s]; }" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"(row));
    }
}
// A 16x16 operand tile from shared memory, rows `stride` halves apart and 16-byte aligned.
// `outer`: the tile's memory rows are A's rows (row-major A) or B's k (row-major B).
__device__ __forceinline__ void weft_ldsm_tile(unsigned* r, const half* tile, int stride, bool outer, bool trans) {
    unsigned l = weft_lane();
    int row = outer ? (int)(l & 15) : (int)((l >> 4) * 8 + (l & 7));
    int col = outer ? (int)(l >> 4) * 8 : (int)((l >> 3) & 1) * 8;
    weft_ldsm(r, tile + row * stride + col, trans);
}
// Two halves of a tile (element offsets o0, o1) as one b32, the first in the low bits.
__device__ __forceinline__ unsigned weft_pack(const half* p, int o0, int o1) {
    const unsigned short* q = (const unsigned short*)p;
    return (unsigned)q[o0] | ((unsigned)q[o1] << 16);
}
// Operand tiles element by element: element (i, j) at p[i * rs + j * cs].
__device__ __forceinline__ void weft_load_a(unsigned* r, const half* p, int rs, int cs) {
    unsigned l = weft_lane(); int g = (int)(l >> 2), t = (int)(l & 3) * 2;
    WEFT_UNROLL for (int q = 0; q < 4; q++) { int i = g + 8 * (q & 1), j = t + 8 * (q >> 1); r[q] = weft_pack(p, i * rs + j * cs, i * rs + (j + 1) * cs); }
}
__device__ __forceinline__ void weft_load_b(unsigned* r, const half* p, int rs, int cs) {
    unsigned l = weft_lane(); int g = (int)(l >> 2), t = (int)(l & 3) * 2;
    WEFT_UNROLL for (int q = 0; q < 4; q++) { int i = t + 8 * (q & 1), j = 8 * (q >> 1) + g; r[q] = weft_pack(p, i * rs + j * cs, (i + 1) * rs + j * cs); }
}
// f32 accumulators: element q of a lane is C[g + 8h][8nb + t + e], q = 4nb + 2h + e.
__device__ __forceinline__ int weft_acc_offset(int q, int stride) {
    unsigned l = weft_lane(); int g = (int)(l >> 2), t = (int)(l & 3) * 2;
    return (g + 8 * ((q >> 1) & 1)) * stride + 8 * (q >> 2) + t + (q & 1);
}
__device__ __forceinline__ void weft_fill_f32(float* c, float v) { WEFT_UNROLL for (int q = 0; q < 8; q++) c[q] = v; }
__device__ __forceinline__ void weft_load_acc_f32(float* c, const float* p, int stride) { WEFT_UNROLL for (int q = 0; q < 8; q++) c[q] = p[weft_acc_offset(q, stride)]; }
__device__ __forceinline__ void weft_store_acc_f32(float* p, const float* c, int stride) { WEFT_UNROLL for (int q = 0; q < 8; q++) p[weft_acc_offset(q, stride)] = c[q]; }
// f16 accumulators: b32 q of a lane holds elements 2q and 2q + 1 of the f32 numbering.
__device__ __forceinline__ void weft_fill_f16(unsigned* c, half v) { unsigned b = *(const unsigned short*)&v; WEFT_UNROLL for (int q = 0; q < 4; q++) c[q] = b | (b << 16); }
__device__ __forceinline__ void weft_load_acc_f16(unsigned* c, const half* p, int stride) { WEFT_UNROLL for (int q = 0; q < 4; q++) c[q] = weft_pack(p, weft_acc_offset(2 * q, stride), weft_acc_offset(2 * q + 1, stride)); }
__device__ __forceinline__ void weft_store_acc_f16(half* p, const unsigned* c, int stride) {
    unsigned short* o = (unsigned short*)p;
    WEFT_UNROLL for (int q = 0; q < 4; q++) { o[weft_acc_offset(2 * q, stride)] = (unsigned short)(c[q] & 0xffff); o[weft_acc_offset(2 * q + 1, stride)] = (unsigned short)(c[q] >> 16); }
}
// Element-wise work on f32 accumulators (weft_ir::fragment::elements): element q of a lane
// is C[weft_acc_row(q)][weft_acc_col(q)]; a rows tile holds R[weft_rows_row(h)] in r[h],
// alike in the 4 lanes of a quad (which hold a row's 16 values between them).
__device__ __forceinline__ int weft_acc_row(int q) { return (int)(weft_lane() >> 2) + 8 * ((q >> 1) & 1); }
__device__ __forceinline__ int weft_acc_col(int q) { return 8 * (q >> 2) + (int)(weft_lane() & 3) * 2 + (q & 1); }
__device__ __forceinline__ int weft_rows_row(int h) { return (int)(weft_lane() >> 2) + 8 * h; }
// r = the row maxima (MAX) or sums of N consecutive tiles: a lane's own 4 values a tile and
// row, then the quad's by two butterfly shuffles.
template <int N, bool MAX> __device__ __forceinline__ void weft_row_reduce(float* r, const float (*c)[8]) {
    WEFT_UNROLL for (int h = 0; h < 2; h++) {
        float v = c[0][2 * h];
        WEFT_UNROLL for (int t = 0; t < N; t++) {
            WEFT_UNROLL for (int q = 0; q < 4; q++) {
                if (t == 0 && q == 0) continue;
                float x = c[t][4 * (q >> 1) + 2 * h + (q & 1)];
                v = MAX ? fmaxf(v, x) : v + x;
            }
        }
        WEFT_UNROLL for (int s = 1; s < 4; s <<= 1) {
            float o = __shfl_xor_sync(0xffffffffu, v, s);
            v = MAX ? fmaxf(v, o) : v + o;
        }
        r[h] = v;
    }
}
// An f32 accumulator tile as an A operand: A[g + 8h][t + 8kb + e] is c[4kb + 2h + e], so
// b32 q of A packs c[2q] and c[2q + 1] (the first in the low half).
__device__ __forceinline__ void weft_acc_to_a(unsigned* a, const float* c) {
    WEFT_UNROLL for (int q = 0; q < 4; q++) { __half2 h = __floats2half2_rn(c[2 * q], c[2 * q + 1]); a[q] = *(const unsigned*)&h; }
}
// d = a * b + c on a 16x16x16 tile: two m16n8k16 multiplies (B's and C's halves along n).
// Not volatile: registers only, so the compiler may interleave them with the next loads.
__device__ __forceinline__ void weft_mma_f32(float* d, const unsigned* a, const unsigned* b, const float* c) {
    WEFT_UNROLL for (int h = 0; h < 2; h++) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
            : "=f"(d[4 * h]), "=f"(d[4 * h + 1]), "=f"(d[4 * h + 2]), "=f"(d[4 * h + 3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * h]), "r"(b[2 * h + 1]),
              "f"(c[4 * h]), "f"(c[4 * h + 1]), "f"(c[4 * h + 2]), "f"(c[4 * h + 3]));
    }
}
__device__ __forceinline__ void weft_mma_f16(unsigned* d, const unsigned* a, const unsigned* b, const unsigned* c) {
    WEFT_UNROLL for (int h = 0; h < 2; h++) {
        asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
            : "=r"(d[2 * h]), "=r"(d[2 * h + 1])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[2 * h]), "r"(b[2 * h + 1]), "r"(c[2 * h]), "r"(c[2 * h + 1]));
    }
}
"#;

/// The CUDA fragment dialect (see the module docs).
pub(crate) struct MmaSync;

fn is_f32(f: &Fragment) -> bool {
    f.dtype() == DType::F32
}

impl FragmentDialect for MmaSync {
    fn unsupported(&self, f: &Fragment) -> Option<String> {
        if f.is_warpgroup() {
            let s = f.shape();
            return (f.dtype() != DType::F32 || s.k != 16 || !s.n.is_multiple_of(8) || s.n > 256).then(|| {
                format!(
                    "a warpgroup accumulator is f32 m64nNk16 with N a multiple of 8 up to 256, not {} {}",
                    f.dtype(),
                    s
                )
            });
        }
        if f.shape() != SHAPE {
            return Some(format!(
                "CUDA fragments are m16n16k16 (two mma.sync.m16n8k16), not {}",
                f.shape()
            ));
        }
        match (f.role(), f.dtype()) {
            (FragRole::A | FragRole::B, DType::F16) => None,
            (FragRole::Accumulator, DType::F16 | DType::F32) => None,
            (FragRole::Rows, DType::F32) => None,
            (role, dtype) => Some(format!("mma.sync has no {dtype} {} fragment", role.name())),
        }
    }

    /// `unsigned a_frag[4][4]`, `float acc[8][8]`: a lane's registers of each tile.
    fn decl(&self, f: &Fragment, name: &str) -> String {
        if f.is_warpgroup() {
            return format!("float {name}[{}][{}]", f.count(), f.shape().n / 2);
        }
        let (ty, regs) = match f.role() {
            FragRole::Accumulator if is_f32(f) => ("float", 8),
            FragRole::Rows => ("float", 2),
            _ => ("unsigned", 4),
        };
        format!("{ty} {name}[{}][{regs}]", f.count())
    }

    fn fill(&self, f: &Fragment, tile: &str, value: &str) -> String {
        if f.is_warpgroup() {
            return format!("weft_wg_fill<{}>({tile}, {value})", f.shape().n);
        }
        if f.role() == FragRole::Rows {
            format!("{tile}[0] = {tile}[1] = {value}")
        } else if is_f32(f) {
            format!("weft_fill_f32({tile}, {value})")
        } else {
            // A and B tiles are filled like f16 accumulators: two halves per register.
            format!("weft_fill_f16({tile}, {value})")
        }
    }

    fn load(&self, f: &Fragment, tile: &str, ptr: &str, stride: i64, scope: Scope) -> String {
        let row_major = f.layout() == FragLayout::RowMajor;
        match f.role() {
            FragRole::Accumulator if is_f32(f) => {
                format!("weft_load_acc_f32({tile}, {ptr}, {stride})")
            }
            FragRole::Accumulator => format!("weft_load_acc_f16({tile}, {ptr}, {stride})"),
            // `ldmatrix` reads shared memory in 16-byte rows.
            role if scope == Scope::Shared && stride % 8 == 0 => {
                // Row-major A and row-major B both have the tile's outer index as memory
                // rows; A's rows come out as `ldmatrix` gives them, B's transposed.
                let trans = (role == FragRole::B) == row_major;
                format!("weft_ldsm_tile({tile}, {ptr}, {stride}, {row_major}, {trans})")
            }
            role => {
                let (rs, cs) = if row_major { (stride, 1) } else { (1, stride) };
                let which = if role == FragRole::A { "a" } else { "b" };
                format!("weft_load_{which}({tile}, {ptr}, {rs}, {cs})")
            }
        }
    }

    /// Accumulators only: operand tiles reach shared memory by 16-byte vector copies or
    /// `cp.async` on CUDA, never through `mma.sync`'s registers.
    fn store(&self, f: &Fragment, tile: &str, ptr: &str, stride: i64) -> Result<String, String> {
        if f.role() != FragRole::Accumulator {
            return Err(format!(
                "CUDA stores accumulator fragments only, not a {} tile",
                f.role().name()
            ));
        }
        if f.is_warpgroup() {
            return Ok(format!(
                "weft_wg_store<{}>({ptr}, {tile}, {stride})",
                f.shape().n
            ));
        }
        let ty = if is_f32(f) { "f32" } else { "f16" };
        Ok(format!("weft_store_acc_{ty}({ptr}, {tile}, {stride})"))
    }

    fn mma(&self, acc: &Fragment, d: &str, a: &str, b: &str, c: &str) -> String {
        let ty = if is_f32(acc) { "f32" } else { "f16" };
        format!("weft_mma_{ty}({d}, {a}, {b}, {c})")
    }

    /// `ldmatrix` rows are 16 bytes.
    fn map(&self, m: &ElementMap) -> Result<String, String> {
        let dst = m.dst;
        let f32 = |f: &Fragment| f.dtype() == DType::F32 && !f.is_warpgroup();
        if !f32(dst) || m.args.iter().any(|(_, f, _)| !f32(f)) {
            return Err("element-wise maps on f32 accumulators and rows only".to_string());
        }
        let rows = dst.role() == FragRole::Rows;
        let (n, row, col) = if rows {
            (2, "weft_rows_row(weft_q)", "0")
        } else {
            (8, "weft_acc_row(weft_q)", "weft_acc_col(weft_q)")
        };
        let coords: String = [(&m.row, row), (&m.col, col)]
            .into_iter()
            .filter_map(|(name, at)| name.as_ref().map(|n| format!(" const int {n} = {at};")))
            .collect();
        let args: String = m
            .args
            .iter()
            .map(|(name, f, tile)| {
                // A rows argument of an accumulator's element: the element's row half.
                let q = if f.role() == FragRole::Rows && !rows {
                    "(weft_q >> 1) & 1"
                } else {
                    "weft_q"
                };
                format!(" const float {name} = {tile}[{q}];")
            })
            .collect();
        Ok(format!(
            "WEFT_UNROLL for (int weft_q = 0; weft_q < {n}; weft_q++) {{{coords}{args} {}[weft_q] = {}; }}",
            m.tile, m.value
        ))
    }

    fn row_reduce(
        &self,
        dst: &str,
        src: &Fragment,
        first: &str,
        tiles: u32,
        max: bool,
    ) -> Result<String, String> {
        if src.dtype() != DType::F32 {
            return Err(format!(
                "row reductions of f32 accumulators, not {}",
                src.dtype()
            ));
        }
        Ok(format!("weft_row_reduce<{tiles}, {max}>({dst}, &{first})"))
    }

    fn convert(
        &self,
        dst: &Fragment,
        tile: &str,
        src: &Fragment,
        from: &str,
    ) -> Result<String, String> {
        if dst.dtype() != DType::F16 || src.dtype() != DType::F32 {
            return Err(format!(
                "conversions of f32 accumulators to f16 A tiles, not {} to {}",
                src.dtype(),
                dst.dtype()
            ));
        }
        Ok(format!("weft_acc_to_a({tile}, {from})"))
    }

    fn tile_align(&self) -> u32 {
        16
    }

    fn mbarrier_decl(&self, name: &str, count: u32) -> Option<String> {
        Some(format!(
            "__shared__ __align__(8) unsigned long long {name}[{count}]"
        ))
    }

    fn wgmma(
        &self,
        acc: &Fragment,
        tile: &str,
        a: &str,
        b: &str,
        b_box_bytes: i64,
    ) -> Result<String, String> {
        Ok(format!(
            "weft_wgmma_n{}({tile}, {a}, {b}, {b_box_bytes})",
            acc.shape().n
        ))
    }

    fn wgmma_sync(&self, what: &str, pending: u32) -> Result<String, String> {
        Ok(match what {
            "fence" => "weft_wgmma_fence()".to_string(),
            "commit" => "weft_wgmma_commit()".to_string(),
            _ => format!("weft_wgmma_wait<{pending}>()"),
        })
    }

    fn tma_load(
        &self,
        dst: &str,
        map: &str,
        coords: &[String],
        bar: &str,
    ) -> Result<String, String> {
        match coords.len() {
            2 | 3 => Ok(format!(
                "weft_tma_{}d({dst}, &{map}, {}, {bar})",
                coords.len(),
                coords.join(", ")
            )),
            n => Err(format!("a TMA copy of {n} dimensions (2 or 3)")),
        }
    }

    fn mbarrier_op(&self, what: &str, bar: &str, arg: &str) -> Result<String, String> {
        Ok(match what {
            "init" => format!("weft_mbar_init({bar}, {arg})"),
            "expect" => format!("weft_mbar_expect({bar}, {arg})"),
            _ => format!("weft_mbar_wait({bar}, {arg})"),
        })
    }
}
