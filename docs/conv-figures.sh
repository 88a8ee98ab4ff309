#!/usr/bin/env bash
# The GPU figures of the convolution family (docs/results.md), in one run on the GPU
# machine: cuDNN and PyTorch references, then weft's tuner on each shape and target.
#   bash docs/conv-figures.sh PART OUT   (PART: cuda | vulkan | fused)
set -u
part=$1; out=$2; weft=${WEFT:-.dev/bin/weft}
export WEFT_RECORDS=$out/records.json
conv=(n=1,c=64,h=224,w=224,k=64 n=1,c=128,h=122,w=122,k=128 n=1,c=128,h=128,w=128,k=128
      n=1,c=64,h=56,w=56,k=64 n=1,c=64,h=64,w=64,k=32 n=1,c=64,h=112,w=112,k=128)
dw=(b=3,c=4,h=16,w=32,k=7 b=1,c=32,h=112,w=112,k=3 b=1,c=144,h=56,w=56,k=3
    b=1,c=192,h=28,w=28,k=3 b=1,c=384,h=14,w=14,k=3 b=1,c=960,h=7,w=7,k=3
    b=8,c=144,h=56,w=56,k=3 b=1,c=144,h=56,w=56,k=3,stride=2 b=1,c=192,h=28,w=28,k=3,stride=2)
case $part in
cuda)
  python3 docs/conv2d-cudnn-reference.py > $out/cudnn.txt 2>&1
  python3 docs/depthwise-pytorch-reference.py > $out/pytorch-depthwise.txt 2>&1
  for s in "${conv[@]}"; do
    for op in winograd-conv2d conv2d; do echo "== $op $s"; $weft tune --op $op --shape $s --target cuda 2>&1 | grep -v '^\s*$' | head -12; done
  done > $out/tune-conv-cuda.txt
  for s in "${dw[@]}"; do echo "== depthwise $s"; $weft tune --op depthwise-conv2d --shape $s --target cuda 2>&1 | head -12; done > $out/tune-depthwise-cuda.txt
  ;;
vulkan)
  for s in "${conv[@]}"; do
    for op in winograd-conv2d conv2d; do echo "== $op $s"; $weft tune --op $op --shape $s --target vulkan 2>&1 | grep -v '^\s*$' | head -12; done
  done > $out/tune-conv-vulkan.txt
  ;;
esac
