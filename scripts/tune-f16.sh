#!/usr/bin/env bash
# Tunes the fp16 templates (matmul-f16 at its benchmark shapes; the NHWC, NCHW and fused
# bias-relu fp16 convs at seed 003's and ResNet-50's shapes; `OPS=...` picks the convs) on cuda and vulkan into one records file, which
# `weft report --records FILE` then uses for the results page. `TARGETS="cuda"` retunes
# one target only (the other's records stay).
#
#   bash scripts/tune-f16.sh [WEFT] [RECORDS]      # on the GPU machine
set -euo pipefail
weft=${1:-weft}
records=${2:-measurements/h100-2026-11-23/tuning-records-h100.json}
for shape in ${MATMUL_SHAPES-m=1024,n=1024,k=1024 m=2039,n=2039,k=2039 m=4096,n=4096,k=4096}; do
  for target in ${TARGETS:-cuda vulkan}; do
    "$weft" tune --op matmul-f16 --shape "$shape" --target "$target" --records "$records" | tail -2
  done
done
for hw in "c=64,h=224,w=224,k=64" "c=128,h=122,w=122,k=128" "c=128,h=128,w=128,k=128" \
          "c=64,h=56,w=56,k=64" "c=64,h=64,w=64,k=32" "c=64,h=112,w=112,k=128"; do
  shapes+=("n=1,$hw,r=3,s=3,stride=1,pad=1")
done
shapes+=("n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1" "n=32,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1")
for op in ${OPS:-conv2d-f16 conv2d-f16-nchw conv2d-f16-bias-relu}; do
  for shape in "${shapes[@]}"; do
    for target in ${TARGETS:-cuda vulkan}; do
      "$weft" tune --op "$op" --shape "$shape" --target "$target" --records "$records" | tail -2
    done
  done
done
