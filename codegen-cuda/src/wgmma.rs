//! Hopper's matrix path (sm_90a) through inline PTX: warpgroup MMAs (`wgmma.mma_async`)
//! from shared-memory descriptors, TMA bulk tensor copies and mbarriers. The IR side is
//! [`weft_ir::tma`]; the layouts are the PTX ISA's:
//!
//! - **Descriptors** (64 bits): start address ÷ 16 in bits 0–13, leading byte offset ÷ 16
//!   in 16–29, stride byte offset ÷ 16 in 32–45, the swizzle mode in 62–63 (1: 128
//!   bytes). A k-major `A` tile: 8-row groups 1024 bytes apart (stride offset), the k
//!   step advancing the start address by 32 bytes. An m/n-major `B` tile: 64-column
//!   boxes `box` bytes apart (leading offset), 8-row k groups 1024 bytes apart.
//! - **Accumulators** of `m64nNk16` (f32, `N/2` registers a thread): register
//!   `q = 4j + 2h + e` of lane `l` in warp `w` of the warpgroup holds row
//!   `16w + l/4 + 8h`, column `8j + 2(l%4) + e`.
//! - **TMA**: `cp.async.bulk.tensor.{2,3}d` through a `CUtensorMap` passed by value
//!   (`__grid_constant__`), completing bytes on an mbarrier.
//!
//! Each operation is one call of a helper from [`prelude`], so the kernel reads like
//! the IR.

/// The helpers every kernel with Hopper operations includes; `widths` are the `N` of its
/// `wgmma`s (one multiply helper each).
pub(crate) fn prelude(widths: &[u32]) -> String {
    let mut out = String::from(PRELUDE);
    for &n in widths {
        out.push_str(&multiply(n));
    }
    out
}

const PRELUDE: &str = r#"// Hopper (sm_90a): TMA, mbarriers and wgmma; layouts in weft's wgmma.rs.
struct __align__(64) weft_tensor_map { unsigned long long v[16]; };
__device__ __forceinline__ unsigned weft_smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// Where threads reach a swizzled tile: half `i` (logical, from a 1024-byte aligned start)
// lies in 16-byte chunk (i / 8) ^ (i / 64 % 8) of its 128-byte row.
__device__ __forceinline__ int weft_swz128(int i) { return i ^ ((i >> 3) & 56); }
__device__ __forceinline__ void weft_mbar_init(unsigned long long* b, unsigned arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(weft_smem_addr(b)), "r"(arrivals) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void weft_mbar_expect(unsigned long long* b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(weft_smem_addr(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void weft_mbar_wait(unsigned long long* b, int parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(weft_smem_addr(b)), "r"((unsigned)parity & 1u) : "memory");
    }
}
__device__ __forceinline__ void weft_tma_2d(half* dst, const weft_tensor_map* map, int c0, int c1, unsigned long long* b) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(weft_smem_addr(dst)), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(weft_smem_addr(b)) : "memory");
}
__device__ __forceinline__ void weft_tma_3d(half* dst, const weft_tensor_map* map, int c0, int c1, int c2, unsigned long long* b) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 :: "r"(weft_smem_addr(dst)), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(weft_smem_addr(b)) : "memory");
}
// Shared-memory descriptors, 128-byte swizzle (mode 1 in bits 62-63).
__device__ __forceinline__ unsigned long long weft_desc(const half* p, unsigned lead, unsigned stride) {
    return (unsigned long long)((weft_smem_addr(p) & 0x3FFFF) >> 4) | ((unsigned long long)(lead >> 4) << 16)
         | ((unsigned long long)(stride >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void weft_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void weft_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> __device__ __forceinline__ void weft_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
// Warpgroup accumulators (f32, m64nN): fill, and store row-major with rows `stride` apart.
template <int N> __device__ __forceinline__ void weft_wg_fill(float* d, float v) {
    #pragma unroll
    for (int q = 0; q < N / 2; q++) d[q] = v;
}
template <int N> __device__ __forceinline__ void weft_wg_store(float* p, const float* d, int stride) {
    int t = (int)(threadIdx.x & 127), w = t >> 5, l = t & 31;
    int row = 16 * w + (l >> 2), col = 2 * (l & 3);
    #pragma unroll
    for (int q = 0; q < N / 2; q++) {
        p[(row + 8 * ((q >> 1) & 1)) * stride + 8 * (q >> 2) + col + (q & 1)] = d[q];
    }
}
"#;

/// `weft_wgmma_n{N}(d, a, b, box)`: `d += A · B` with `A` k-major at `a`, `B` m/n-major at
/// `b` in boxes `box` bytes apart (scale-d 1: always accumulate; B transposed).
fn multiply(n: u32) -> String {
    let regs = n / 2;
    let list: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
    let outs: Vec<String> = (0..regs).map(|i| format!("\"+f\"(d[{i}])")).collect();
    format!(
        "__device__ __forceinline__ void weft_wgmma_n{n}(float* d, const half* a, const half* b, unsigned box) {{\n    \
         unsigned long long da = weft_desc(a, 16, 1024), db = weft_desc(b, box, 1024);\n    \
         asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{s}, 0; \"\n        \
         \"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{list}}}, %{a}, %{b}, p, 1, 1, 0, 1; }}\"\n        \
         : {outs}\n        \
         : \"l\"(da), \"l\"(db), \"r\"(1) : \"memory\");\n}}\n",
        s = regs + 2,
        a = regs,
        b = regs + 1,
        list = list.join(", "),
        outs = outs.join(", "),
    )
}
