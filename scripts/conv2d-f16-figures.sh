#!/usr/bin/env bash
# The fp16 implicit-GEMM convolution figures of docs/results-history.md in one run on the GPU
# machine: cuDNN fp16 NHWC through PyTorch, then weft's tuner on each shape (CUDA wmma and
# Vulkan cooperative matrices), the bias-ReLU and NCHW variants, compute-sanitizer at odd
# sizes, and the fp16 matmul re-tuned.
#   bash scripts/conv2d-f16-figures.sh OUT
set -u
out=$1; weft=${WEFT:-.dev/bin/weft}
export WEFT_RECORDS=$out/records.json
conv=(n=1,c=64,h=224,w=224,k=64 n=1,c=128,h=122,w=122,k=128 n=1,c=128,h=128,w=128,k=128
      n=1,c=64,h=56,w=56,k=64 n=1,c=64,h=64,w=64,k=32 n=1,c=64,h=112,w=112,k=128
      n=8,c=64,h=56,w=56,k=64 n=32,c=128,h=28,w=28,k=128)
python3 scripts/conv2d-f16-cudnn-reference.py > $out/cudnn.txt 2>&1
for s in "${conv[@]}"; do
  for op in ${CUDA_OPS:-conv2d-f16 conv2d-f16-bias-relu}; do
    echo "== $op $s"; $weft tune --op $op --shape $s --target cuda 2>&1 | grep -v '^\s*$' | head -9
  done
done > $out/tune-cuda.txt
for s in "${conv[@]}"; do
  echo "== conv2d-f16 $s"; $weft tune --op conv2d-f16 --shape $s --target vulkan 2>&1 | grep -v '^\s*$' | head -9
done > $out/tune-vulkan.txt
for s in n=1,c=64,h=56,w=56,k=64 n=1,c=64,h=224,w=224,k=64; do
  echo "== conv2d-f16-nchw $s"; $weft tune --op conv2d-f16-nchw --shape $s --target cuda 2>&1 | grep -v '^\s*$' | head -6
done > $out/tune-nchw.txt
for tool in memcheck racecheck; do
  for op in conv2d-f16 conv2d-f16-bias-relu conv2d-f16-nchw; do
    for s in n=2,c=3,h=17,w=19,k=5,stride=2,pad=1 n=1,c=24,h=7,w=6,k=40,stride=2,pad=2 n=3,c=8,h=5,w=5,k=17,r=1,s=1,pad=0; do
      echo "== $tool $op $s"; compute-sanitizer --tool $tool --print-limit 5 $weft run --op $op --shape $s --target cuda --iters 1 2>&1 | tail -2
    done
  done
done > $out/sanitizer.txt
