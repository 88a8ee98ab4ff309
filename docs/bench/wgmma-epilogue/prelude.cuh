#if defined(__has_include) && __has_include(<cuda_fp16.h>)
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

// Tensor cores: m16n16k16 tiles as two mma.sync.m16n8k16 (sm_80+); layouts in weft's mma.rs.
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

// Hopper (sm_90a): TMA, mbarriers and wgmma; layouts in weft's wgmma.rs.
struct __align__(64) weft_tensor_map { unsigned long long v[16]; };
__device__ __forceinline__ unsigned weft_smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
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
__device__ __forceinline__ void weft_wgmma_n128(float* d, const half* a, const half* b, unsigned box) {
    unsigned long long da = weft_desc(a, 16, 1024), db = weft_desc(b, box, 1024);
    asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0; "
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 1; }"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(1) : "memory");
}

