// Times the kernels of variants.cu (and weft's own emitted kernel) on one GPU, in one
// process, round-robin, with CUDA events around back-to-back launches; checks every
// output element was written and 4096 sampled elements against a float64 reference.
//
//   bench CUBIN M N K ACT NAME...      (ACT: 0 bias, 1 bias + tanh-GELU)
//
// A name starting with `weft:` is a kernel weft emitted (parameters A, B, bias, out,
// maps); others are variants.cu's (bias, out, M, N, K, maps). The dynamic shared memory
// and the grid come from the name (see variants.cu). libcuda is opened with dlopen, so
// this builds with no CUDA toolkit: g++ -O2 -I<cuda include> bench.cpp -ldl
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#define FN(name) static decltype(&::name) p_##name;
FN(cuInit) FN(cuDeviceGet) FN(cuDevicePrimaryCtxRetain) FN(cuCtxSetCurrent) FN(cuModuleLoad)
FN(cuModuleGetFunction) FN(cuFuncSetAttribute) FN(cuMemAlloc) FN(cuMemcpyHtoD) FN(cuMemcpyDtoH)
FN(cuLaunchKernel) FN(cuEventCreate) FN(cuEventRecord) FN(cuEventSynchronize)
FN(cuEventElapsedTime) FN(cuCtxSynchronize) FN(cuTensorMapEncodeTiled) FN(cuGetErrorString)
FN(cuDeviceGetAttribute) FN(cuOccupancyMaxActiveBlocksPerMultiprocessor) FN(cuMemsetD16)

static void load() {
    void* h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) { fprintf(stderr, "no libcuda.so.1\n"); exit(1); }
#define LD(name, sym) p_##name = (decltype(p_##name))dlsym(h, sym); if (!p_##name) { fprintf(stderr, "no %s\n", sym); exit(1); }
    LD(cuInit, "cuInit") LD(cuDeviceGet, "cuDeviceGet")
    LD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") LD(cuCtxSetCurrent, "cuCtxSetCurrent")
    LD(cuModuleLoad, "cuModuleLoad") LD(cuModuleGetFunction, "cuModuleGetFunction")
    LD(cuFuncSetAttribute, "cuFuncSetAttribute") LD(cuMemAlloc, "cuMemAlloc_v2")
    LD(cuMemcpyHtoD, "cuMemcpyHtoD_v2") LD(cuMemcpyDtoH, "cuMemcpyDtoH_v2")
    LD(cuLaunchKernel, "cuLaunchKernel") LD(cuEventCreate, "cuEventCreate")
    LD(cuEventRecord, "cuEventRecord") LD(cuEventSynchronize, "cuEventSynchronize")
    LD(cuEventElapsedTime, "cuEventElapsedTime_v2") LD(cuCtxSynchronize, "cuCtxSynchronize")
    LD(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled") LD(cuGetErrorString, "cuGetErrorString")
    LD(cuDeviceGetAttribute, "cuDeviceGetAttribute")
    LD(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    LD(cuMemsetD16, "cuMemsetD16_v2")
}

static void ck(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) {
        const char* s = "?";
        p_cuGetErrorString(r, &s);
        fprintf(stderr, "%s: %s\n", what, s);
        exit(1);
    }
}

static CUtensorMap map2d(CUdeviceptr p, uint64_t inner, uint64_t outer, uint32_t box_rows) {
    CUtensorMap m;
    uint64_t dims[2] = {inner, outer};
    uint64_t strides[1] = {inner * 2};
    uint32_t box[2] = {64, box_rows};
    uint32_t elem[2] = {1, 1};
    ck(p_cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void*)p, dims, strides, box,
                                elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
       "cuTensorMapEncodeTiled");
    return m;
}

static float h2f(uint16_t h) {
    uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? std::ldexp((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp((float)(m | 1024), (int)e - 25);
    return s ? -v : v;
}
static uint16_t f2h(float f) {  // round to nearest even, finite inputs in range
    uint32_t x; memcpy(&x, &f, 4);
    uint32_t s = (x >> 16) & 0x8000; int e = (int)((x >> 23) & 255) - 127 + 15; uint32_t m = x & 0x7fffff;
    if (e <= 0) { if (e < -10) return s; m |= 0x800000; int sh = 14 - e; uint32_t r = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (r & 1))) r++; return s | r; }
    uint32_t r = ((uint32_t)e << 10) | (m >> 13); uint32_t rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++; return s | r;
}

struct Kernel { std::string name; CUfunction f; unsigned smem; unsigned grid; bool weft; };

int main(int argc, char** argv) {
    if (argc < 7) { fprintf(stderr, "bench CUBIN M N K ACT NAME...\n"); return 2; }
    load();
    const char* cubin = argv[1];
    int M = atoi(argv[2]), N = atoi(argv[3]), K = atoi(argv[4]), ACT = atoi(argv[5]);
    ck(p_cuInit(0), "cuInit");
    CUdevice dev; ck(p_cuDeviceGet(&dev, 0), "cuDeviceGet");
    CUcontext ctx; ck(p_cuDevicePrimaryCtxRetain(&ctx, dev), "ctx"); ck(p_cuCtxSetCurrent(ctx), "ctx");
    int sms = 0; ck(p_cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "sms");
    CUmodule mod; ck(p_cuModuleLoad(&mod, cubin), "cuModuleLoad");

    std::mt19937 rng(7);
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    std::vector<uint16_t> a((size_t)M * K), b((size_t)K * N);
    std::vector<float> bias(N);
    for (auto& x : a) x = f2h(U(rng));
    for (auto& x : b) x = f2h(U(rng) * 0.1f);
    for (auto& x : bias) x = U(rng);
    CUdeviceptr da, db, dbias, dout;
    ck(p_cuMemAlloc(&da, a.size() * 2), "alloc"); ck(p_cuMemAlloc(&db, b.size() * 2), "alloc");
    ck(p_cuMemAlloc(&dbias, N * 4), "alloc"); ck(p_cuMemAlloc(&dout, (size_t)M * N * 2), "alloc");
    ck(p_cuMemcpyHtoD(da, a.data(), a.size() * 2), "h2d"); ck(p_cuMemcpyHtoD(db, b.data(), b.size() * 2), "h2d");
    ck(p_cuMemcpyHtoD(dbias, bias.data(), N * 4), "h2d");
    CUtensorMap amap = map2d(da, K, M, 128), bmap = map2d(db, N, K, 64);

    // Sampled float64 reference.
    std::vector<int> sm(4096), sn(4096);
    std::vector<double> ref(4096);
    for (int i = 0; i < 4096; i++) {
        sm[i] = rng() % M; sn[i] = rng() % N;
        double acc = 0;
        for (int k = 0; k < K; k++) acc += (double)h2f(a[(size_t)sm[i] * K + k]) * h2f(b[(size_t)k * N + sn[i]]);
        double x = acc + bias[sn[i]];
        ref[i] = ACT == 0 ? x : 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
    }

    std::vector<Kernel> ks;
    for (int i = 6; i < argc; i++) {
        Kernel k; k.name = argv[i]; k.weft = k.name.rfind("weft:", 0) == 0;
        std::string sym = k.weft ? k.name.substr(5) : k.name;
        ck(p_cuModuleGetFunction(&k.f, mod, sym.c_str()), sym.c_str());
        int st = k.name.rfind("s3_", 0) == 0 ? 3 : k.name.rfind("s2_", 0) == 0 ? 2 : 4;
        bool staged = k.name.find("direct") == std::string::npos && k.name.find("alias") == std::string::npos;
        k.smem = k.weft ? (unsigned)atoi(getenv("WEFT_SMEM") ? getenv("WEFT_SMEM") : "164864")
                        : st * 32768 + (staged ? 33792 : 0);
        ck(p_cuFuncSetAttribute(k.f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k.smem), "smem attr");
        int per = 0;
        ck(p_cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, k.f, 128, k.smem), "occupancy");
        unsigned tiles = (M / 128) * (N / 128);
        k.grid = k.name.find("persist") != std::string::npos ? std::min<unsigned>(tiles, sms * per) : tiles;
        printf("%-32s smem %6u B, %d block(s)/SM, grid %u\n", k.name.c_str(), k.smem, per, k.grid);
        ks.push_back(k);
    }
    auto launch = [&](Kernel& k) {
        void* args_weft[] = {&da, &db, &dbias, &dout, &amap, &bmap};
        void* args[] = {&dbias, &dout, &M, &N, &K, &amap, &bmap};
        ck(p_cuLaunchKernel(k.f, k.grid, 1, 1, 128, 1, 1, k.smem, 0, k.weft ? args_weft : args, nullptr), k.name.c_str());
    };
    // Correctness: poisoned output, every element written, samples against float64.
    std::vector<uint16_t> out((size_t)M * N);
    for (auto& k : ks) {
        ck(p_cuMemsetD16(dout, 0x7e00, (size_t)M * N), "poison");
        launch(k);
        ck(p_cuCtxSynchronize(), k.name.c_str());
        ck(p_cuMemcpyDtoH(out.data(), dout, out.size() * 2), "d2h");
        size_t nan = 0;
        for (auto v : out) nan += (v & 0x7c00) == 0x7c00;
        double worst = 0, scale = 0;
        for (int i = 0; i < 4096; i++) {
            worst = std::max(worst, std::fabs(h2f(out[(size_t)sm[i] * N + sn[i]]) - ref[i]));
            scale = std::max(scale, std::fabs(ref[i]));
        }
        printf("check %-32s unwritten/NaN %zu, max |err| %.3e of max |ref| %.2f: %s\n", k.name.c_str(), nan, worst, scale,
               nan == 0 && worst < 2e-2 * scale ? "ok" : "WRONG");
    }
    // Timing: rounds of every kernel in turn; each sample 50 back-to-back launches.
    CUevent e0, e1;
    ck(p_cuEventCreate(&e0, CU_EVENT_DEFAULT), "event"); ck(p_cuEventCreate(&e1, CU_EVENT_DEFAULT), "event");
    for (auto& k : ks) for (int i = 0; i < 20; i++) launch(k);
    std::vector<std::vector<float>> t(ks.size());
    for (int round = 0; round < 15; round++) {
        for (size_t j = 0; j < ks.size(); j++) {
            ck(p_cuEventRecord(e0, 0), "rec");
            for (int i = 0; i < 50; i++) launch(ks[j]);
            ck(p_cuEventRecord(e1, 0), "rec");
            ck(p_cuEventSynchronize(e1), "sync");
            float ms; ck(p_cuEventElapsedTime(&ms, e0, e1), "elapsed");
            t[j].push_back(ms * 1000 / 50);
        }
    }
    double flop = 2.0 * M * N * K;
    printf("\n%-32s %9s %9s %9s %8s   (M N K = %d %d %d, act %d)\n", "kernel", "median", "min", "max", "TFLOP/s", M, N, K, ACT);
    for (size_t j = 0; j < ks.size(); j++) {
        auto v = t[j];
        std::sort(v.begin(), v.end());
        printf("%-32s %7.2f us %7.2f us %7.2f us %8.0f\n", ks[j].name.c_str(), v[v.size() / 2], v.front(), v.back(),
               flop / (v[v.size() / 2] * 1e-6) / 1e12);
    }
    return 0;
}
