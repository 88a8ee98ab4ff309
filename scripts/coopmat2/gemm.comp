#version 450
// C = A · B in fp16 with fp32 accumulation, through workgroup-scope cooperative
// matrices (VK_NV_cooperative_matrix2): one workgroup computes a BM × BN tile of C as one
// matrix, loading BM × BK of A and BK × BN of B a step through tensor layouts. What the
// driver does with it (staging, instruction choice) is its own: this shader exists to
// measure that, beside the subgroup-scope matrices weft's WGSL reaches.
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require

#ifdef UNCLAMPED
#define LAYOUT tensorLayoutNV<2>
#define MAKE_LAYOUT createTensorLayoutNV(2)
#else
#define LAYOUT tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV>
#define MAKE_LAYOUT createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV)
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 128;
layout(constant_id = 2) const uint BN = 128;
layout(constant_id = 3) const uint BK = 32;
// Tiles of M a group of the launch order walks before moving along N (L2 reuse).
layout(constant_id = 4) const uint GROUP = 8;
// k steps unrolled in the loop's body; K must be a multiple of BK · UNROLL.
layout(constant_id = 5) const uint UNROLL = 1;

layout(push_constant) uniform Shape { uint M; uint N; uint K; } p;
layout(binding = 0) readonly buffer BufA { float16_t a[]; };
layout(binding = 1) readonly buffer BufB { float16_t b[]; };
layout(binding = 2) writeonly buffer BufC { float16_t c[]; };

void main() {
    const uint tiles_m = (p.M + BM - 1) / BM;
    const uint tiles_n = (p.N + BN - 1) / BN;
    const uint pid = gl_WorkGroupID.x;
    const uint width = GROUP * tiles_n;
    const uint first_m = (pid / width) * GROUP;
    const uint rows = min(tiles_m - first_m, GROUP);
    const uint tm = first_m + (pid % width) % rows;
    const uint tn = (pid % width) / rows;

    // Clamped layouts read zero past the matrices' edges and drop stores there (any
    // shape); unclamped ones (built with -DUNCLAMPED) leave that undefined, for shapes
    // the tiles divide. -DSTRIDED loads and stores by the KHR extension's strided
    // functions instead (no tensor layouts, shapes the tiles divide).
    LAYOUT la = MAKE_LAYOUT;
    LAYOUT lb = MAKE_LAYOUT;
    LAYOUT lc = MAKE_LAYOUT;
    la = setTensorLayoutDimensionNV(la, p.M, p.K);
    lb = setTensorLayoutDimensionNV(lb, p.K, p.N);
    lc = setTensorLayoutDimensionNV(lc, p.M, p.N);

    coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc =
        coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
    for (uint k0 = 0; k0 < p.K; k0 += BK * UNROLL) {
        [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
            coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
            coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
            const uint kk = k0 + u * BK;
#ifdef STRIDED
            coopMatLoad(ma, a, tm * BM * p.K + kk, p.K, gl_CooperativeMatrixLayoutRowMajor);
            coopMatLoad(mb, b, kk * p.N + tn * BN, p.N, gl_CooperativeMatrixLayoutRowMajor);
#else
            coopMatLoadTensorNV(ma, a, 0, sliceTensorLayoutNV(la, tm * BM, BM, kk, BK));
            coopMatLoadTensorNV(mb, b, 0, sliceTensorLayoutNV(lb, kk, BK, tn * BN, BN));
#endif
            acc = coopMatMulAdd(ma, mb, acc);
        }
    }
    coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> result =
        coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc);
#ifdef STRIDED
    coopMatStore(result, c, tm * BM * p.N + tn * BN, p.N, gl_CooperativeMatrixLayoutRowMajor);
#else
    coopMatStoreTensorNV(result, c, 0, sliceTensorLayoutNV(lc, tm * BM, BM, tn * BN, BN));
#endif
}
