// Hand-written variants of weft's Hopper fp16 matmul (128x128x64 tile, one warpgroup,
// two m64n128k16 accumulators, TMA ring) with a fused epilogue, to measure what the
// epilogue costs before changing the template: `docs/wgmma-epilogue.md`.
//
// prelude.cuh is the helper block weft emits in front of every Hopper kernel (TMA,
// mbarriers, wgmma); build.sh cuts it from `weft model graph --emit` into its output folder.
//
// Template parameters:
//   ST      stages of the TMA ring
//   EPI     0: weft's epilogue today: each accumulator through an f32 staging tile, each
//              thread one column, 64 rows, scalar f16 stores;
//           1: the same staging, each thread 8 adjacent columns: two 16-byte shared
//              loads and one 16-byte global store per 8 elements;
//           2: straight from the accumulator registers (wgmma's layout: two adjacent
//              columns a register pair), f16x2 stores, no staging tile and no barrier.
//   ACT     0: bias only (GPT-2's c_attn); 1: bias then tanh-GELU (c_fc)
//   FAST    tanh as `tanh.approx.f32` (one MUFU op, ~2^-11 relative error)
//   ALIAS   the staging tile laid over the ring (free once the main loop is done)
//   PERSIST a grid of gridDim.x blocks walks the tiles; the next tile's first stages are
//           fetched before this tile's epilogue (only with EPI = 2 or a separate staging)
#include "prelude.cuh"

__device__ __forceinline__ float tanh_fast(float x) {
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

template <int ACT, bool FAST>
__device__ __forceinline__ float act(float v, float b) {
    float x = v + b;
    if (ACT == 0) return x;
    float u = (x + x * x * x * 0.044715f) * 0.7978846f;
    float t = FAST ? tanh_fast(u) : tanhf(u);
    return x * (t + 1.0f) * 0.5f;
}

constexpr int BM = 128, BN = 128, BK = 64;
constexpr int STAGE_HALVES = (BM + BN) * BK;  // A 128x64 then B two 64x64 boxes
constexpr unsigned STAGE_BYTES = STAGE_HALVES * 2;

template <int ST, int EPI, int ACT, bool FAST, bool ALIAS, bool PERSIST>
__device__ __forceinline__ void gemm(const float* __restrict__ bias, half* __restrict__ out,
                                     const weft_tensor_map* amap, const weft_tensor_map* bmap,
                                     int M, int N, int K) {
    extern __shared__ __align__(1024) unsigned char smem[];
    half* A_smem = (half*)smem;
    half* B_smem = (half*)(smem + ST * BM * BK * 2);
    float* C_stage = (float*)(smem + (ALIAS ? 0 : ST * STAGE_BYTES));
    __shared__ __align__(8) unsigned long long full[ST];
    const int tid = threadIdx.x;
    const int tiles_m = M / BM, tiles_n = N / BN, tiles = tiles_m * tiles_n;
    const int KT = K / BK;
    float acc[2][64];

    auto coords = [&](int pid, int& m0, int& n0) {
        // weft's grouped order: 8 row tiles a group.
        int per = 8 * tiles_n;
        int group = pid / per, within = pid % per;
        m0 = (group * 8 + within % 8) * BM;
        n0 = (within / 8) * BN;
    };
    auto issue = [&](int m0, int n0, int kt, int s) {
        weft_mbar_expect(&full[s], STAGE_BYTES);
        weft_tma_2d(A_smem + s * BM * BK, amap, kt * BK, m0, &full[s]);
        weft_tma_2d(B_smem + s * BN * BK, bmap, n0, kt * BK, &full[s]);
        weft_tma_2d(B_smem + s * BN * BK + 4096, bmap, n0 + 64, kt * BK, &full[s]);
    };

    if (tid == 0) {
        for (int s = 0; s < ST; s++) weft_mbar_init(&full[s], 1);
    }
    __syncthreads();
    int tile = blockIdx.x;
    if (tile >= tiles) return;
    int m0, n0;
    coords(tile, m0, n0);
    if (tid == 0) {
        for (int s = 0; s < ST && s < KT; s++) issue(m0, n0, s, s);
    }
    int it = 0;  // k tiles consumed by this block, over all its tiles
    while (true) {
#pragma unroll
        for (int i = 0; i < 2; i++) weft_wg_fill<128>(acc[i], 0.0f);
        for (int ko = 0; ko < KT; ++ko, ++it) {
            int s = it % ST;
            weft_mbar_wait(&full[s], (it / ST) & 1);
            weft_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
                for (int i = 0; i < 2; ++i) {
                    weft_wgmma_n128(acc[i], A_smem + s * BM * BK + i * 4096 + kk * 16,
                                    B_smem + s * BN * BK + kk * 1024, 8192);
                }
            }
            weft_wgmma_commit();
            weft_wgmma_wait<1>();
            __syncthreads();
            if (tid == 0 && ko > 0 && ko + ST - 1 < KT) {
                issue(m0, n0, ko + ST - 1, (it + ST - 1) % ST);
            }
        }
        weft_wgmma_wait<0>();
        int next = tile + gridDim.x;
        int nm0 = 0, nn0 = 0;
        if (PERSIST) {
            // Every stage is free once every warp is past its last wgmma: fetch the next
            // tile's first stages now, so that they arrive during this epilogue.
            __syncthreads();
            if (next < tiles) {
                coords(next, nm0, nn0);
                if (tid == 0) {
                    for (int j = 0; j < ST && j < KT; j++) issue(nm0, nn0, j, (it + j) % ST);
                }
            }
        }
        if (EPI == 2) {
            const int w = tid >> 5, l = tid & 31;
            const int row = 16 * w + (l >> 2), col = 2 * (l & 3);
#pragma unroll
            for (int j = 0; j < 16; j++) {
                const float2 bb = *(const float2*)&bias[n0 + 8 * j + col];
#pragma unroll
                for (int i = 0; i < 2; i++) {
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        float v0 = act<ACT, FAST>(acc[i][4 * j + 2 * h], bb.x);
                        float v1 = act<ACT, FAST>(acc[i][4 * j + 2 * h + 1], bb.y);
                        size_t r = (size_t)(m0 + 64 * i + row + 8 * h);
                        *(__half2*)&out[r * N + n0 + 8 * j + col] = __floats2half2_rn(v0, v1);
                    }
                }
            }
        } else {
            if (ALIAS) __syncthreads();
#pragma unroll
            for (int i = 0; i < 2; i++) {
                weft_wg_store<128>(C_stage, acc[i], 132);
                __syncthreads();
                if (EPI == 0) {
#pragma unroll
                    for (int e = 0; e < 64; e++) {
                        float v = act<ACT, FAST>(C_stage[e * 132 + tid], bias[n0 + tid]);
                        out[(size_t)(m0 + 64 * i + e) * N + n0 + tid] = __float2half_rn(v);
                    }
                } else {
                    const int c = (tid & 15) * 8;
                    float bv[8];
#pragma unroll
                    for (int q = 0; q < 8; q++) bv[q] = bias[n0 + c + q];
#pragma unroll
                    for (int p = 0; p < 8; p++) {
                        int r = (tid >> 4) + 8 * p;
                        float4 x0 = *(const float4*)&C_stage[r * 132 + c];
                        float4 x1 = *(const float4*)&C_stage[r * 132 + c + 4];
                        __half2 h0 = __floats2half2_rn(act<ACT, FAST>(x0.x, bv[0]), act<ACT, FAST>(x0.y, bv[1]));
                        __half2 h1 = __floats2half2_rn(act<ACT, FAST>(x0.z, bv[2]), act<ACT, FAST>(x0.w, bv[3]));
                        __half2 h2 = __floats2half2_rn(act<ACT, FAST>(x1.x, bv[4]), act<ACT, FAST>(x1.y, bv[5]));
                        __half2 h3 = __floats2half2_rn(act<ACT, FAST>(x1.z, bv[6]), act<ACT, FAST>(x1.w, bv[7]));
                        uint4 u = make_uint4(*(unsigned*)&h0, *(unsigned*)&h1, *(unsigned*)&h2, *(unsigned*)&h3);
                        *(uint4*)&out[(size_t)(m0 + 64 * i + r) * N + n0 + c] = u;
                    }
                }
                __syncthreads();
            }
        }
        if (!PERSIST || next >= tiles) break;
        tile = next;
        m0 = nm0;
        n0 = nn0;
    }
}

#define VARIANT(NAME, ST, EPI, ACT, FAST, ALIAS, PERSIST)                                       \
    extern "C" __global__ void __launch_bounds__(128) NAME(                                      \
        const float* __restrict__ bias, half* __restrict__ out, int M, int N, int K,            \
        const __grid_constant__ weft_tensor_map amap, const __grid_constant__ weft_tensor_map bmap) { \
        gemm<ST, EPI, ACT, FAST, ALIAS, PERSIST>(bias, out, &amap, &bmap, M, N, K);             \
    }

// name: s<stages>_<epilogue>_<act>_<tanh>[_alias][_persist]
VARIANT(s4_staged_gelu_exact, 4, 0, 1, false, false, false)
VARIANT(s4_staged_gelu_fast, 4, 0, 1, true, false, false)
VARIANT(s4_vec8_gelu_fast, 4, 1, 1, true, false, false)
VARIANT(s4_direct_gelu_fast, 4, 2, 1, true, false, false)
VARIANT(s4_direct_gelu_exact, 4, 2, 1, false, false, false)
VARIANT(s3_direct_gelu_fast, 3, 2, 1, true, false, false)
VARIANT(s3_direct_gelu_exact, 3, 2, 1, false, false, false)
VARIANT(s3_vec8_gelu_fast_alias, 3, 1, 1, true, true, false)
VARIANT(s4_vec8_gelu_fast_alias, 4, 1, 1, true, true, false)
VARIANT(s4_direct_gelu_fast_persist, 4, 2, 1, true, false, true)
VARIANT(s3_direct_gelu_fast_persist, 3, 2, 1, true, false, true)
VARIANT(s4_staged_bias, 4, 0, 0, false, false, false)
VARIANT(s4_vec8_bias, 4, 1, 0, false, false, false)
VARIANT(s4_direct_bias, 4, 2, 0, false, false, false)
VARIANT(s3_direct_bias, 3, 2, 0, false, false, false)
VARIANT(s3_vec8_bias_alias, 3, 1, 0, false, true, false)
VARIANT(s4_direct_bias_persist, 4, 2, 0, false, false, true)
VARIANT(s3_direct_bias_persist, 3, 2, 0, false, false, true)
VARIANT(s3_staged_gelu_exact_alias, 3, 0, 1, false, true, false)
VARIANT(s3_staged_gelu_fast_alias, 3, 0, 1, true, true, false)
VARIANT(s4_staged_gelu_fast_alias, 4, 0, 1, true, true, false)
VARIANT(s3_vec8_gelu_exact_alias, 3, 1, 1, false, true, false)
VARIANT(s3_staged_bias_alias, 3, 0, 0, false, true, false)
VARIANT(s2_staged_gelu_fast, 2, 0, 1, true, false, false)
VARIANT(s2_staged_gelu_exact, 2, 0, 1, false, false, false)
VARIANT(s2_staged_bias, 2, 0, 0, false, false, false)
