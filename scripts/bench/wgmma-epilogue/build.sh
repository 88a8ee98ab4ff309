#!/usr/bin/env bash
# Builds the epilogue testbed on a machine without a GPU (docs/wgmma-epilogue.md):
# weft's own c_fc and c_attn kernels of GPT-2 (batch 8, 512 tokens) as emitted, the
# hand-written variants (over the helpers weft emits, cut into prelude.cuh), one cubin
# for sm_90a (NVRTC + ptxas from PyPI's nvidia-cuda-* wheels) and the host program (g++,
# libcuda opened at run time).
#   CU13=.../site-packages/nvidia/cu13 PTXAS=.../ptxas bash build.sh OUT_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/wgmma-epilogue}
mkdir -p "$out"
weft=${WEFT:-$here/../../../target/release/weft}
"$weft" model graph zoo:gpt2 --batch 8 --seq 512 --dtype f16 --target "cuda -arch=sm_90a" --emit "$out/emit" > /dev/null
{
  cat "$here/variants.cu"
  for k in 006 002; do sed -n '/^extern "C" __global__/,$p' "$out"/emit/$k-*.cu; done
} > "$out/all.cu"
# The helpers weft emits in front of the kernel (TMA, mbarriers, wgmma), cut from its own
# source so that the variants use exactly weft's.
sed '/^extern "C" __global__/,$d' "$out"/emit/006-*.cu > "$out/prelude.cuh"
export LD_LIBRARY_PATH=$CU13/lib:${LD_LIBRARY_PATH:-}
python3 "$here/../nvrtc_ptx.py" "$out/all.cu" "$out/all.ptx" --gpu-architecture=compute_90a --include-path="$CU13/include" --include-path="$out" -diag-suppress=177
"$PTXAS" -v -arch=sm_90a "$out/all.ptx" -o "$out/all.cubin" 2>&1 | grep -E "Compiling|registers|spill" | paste - - - > "$out/ptxas.txt"
g++ -O2 -std=c++17 -I"$CU13/include" "$here/bench.cpp" -o "$out/bench" -ldl
cat "$out/ptxas.txt" | sed -E 's/ptxas info *: //g' | cut -c1-200
