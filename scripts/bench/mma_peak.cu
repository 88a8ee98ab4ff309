// The mma.sync ceiling of a GPU: every warp multiplies register fragments with
// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32` in a loop, no memory traffic, eight
// independent accumulators per warp. Prints TFLOP/s for 4, 8 and 16 warps per SM, timed
// by CUDA events around the kernel alone (median of 5). What weft's fp16 matmul on
// mma.sync can reach at best; cuBLAS on an H100 uses wgmma, which this does not measure.
//
//   nvcc -O3 -arch=sm_90 scripts/bench/mma_peak.cu -o mma_peak && ./mma_peak
#include <cstdio>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

__global__ void mma_loop(float* out, int iters) {
    unsigned a[4], b[2];
    for (int i = 0; i < 4; ++i) a[i] = threadIdx.x * 2654435761u + i;
    for (int i = 0; i < 2; ++i) b[i] = threadIdx.x * 40503u + i;
    float c[8][4] = {};
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int t = 0; t < 8; ++t) {
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                : "+f"(c[t][0]), "+f"(c[t][1]), "+f"(c[t][2]), "+f"(c[t][3])
                : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    float s = 0;
    for (int t = 0; t < 8; ++t) s += c[t][0] + c[t][1] + c[t][2] + c[t][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main() {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    int sms = prop.multiProcessorCount;
    const int iters = 4096;
    float* out;
    cudaMalloc(&out, sizeof(float) * sms * 4 * 1024);
    printf("%s, %d SMs\n", prop.name, sms);
    for (int warps : {4, 8, 16}) {
        int threads = warps * 32;
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        std::vector<float> ms;
        mma_loop<<<sms, threads>>>(out, iters);  // warm-up
        for (int rep = 0; rep < 6; ++rep) {
            cudaEventRecord(e0);
            mma_loop<<<sms, threads>>>(out, iters);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float t;
            cudaEventElapsedTime(&t, e0, e1);
            if (rep > 0) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        double flops = 2.0 * 16 * 8 * 16 * 8.0 * iters * warps * sms;
        printf("%2d warps/SM: %.3f ms, %.0f TFLOP/s\n", warps, ms[2], flops / (ms[2] * 1e-3) / 1e12);
    }
    return cudaGetLastError() != cudaSuccess;
}
