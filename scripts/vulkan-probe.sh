#!/usr/bin/env bash
# What holds the cooperative-matrix path on Vulkan at a third to a half of CUDA's speed
# (docs/tensor-cores-perf.md §9), in one call on the GPU machine:
#   1. the matrix units' ceiling on each target, through one fragment kernel
#      (tests/examples/fragment_peak.rs: fragments in registers, reloaded from shared
#      memory, reloaded from global memory);
#   2. the Vulkan conv whose time was not stable (8 × 56² × 64: 46.7 µs when tuned,
#      169.4 µs in a bench a minute later), timed five times in a row;
#   3. matmul-f16 and the NHWC conv retuned on Vulkan over the space with k steps of 16
#      and copies through fragments (does a 256×128×16 tile win? does `cc = 1`?), into a
#      copy of the records.
#
#   bash scripts/vulkan-probe.sh WEFT FRAGMENT_PEAK OUT      # on the GPU machine
#
# Run on the H100 on 2026-11-23 at 368d7da: the answers are in docs/tensor-cores-perf.md §10,
# the logs in measurements/h100-2026-11-23/probe-h100-2026-11-23.txt.
set -uo pipefail
weft=${1:-weft}
peak=${2:-fragment_peak}
out=${3:-.}
records=$out/records.json
cp measurements/h100-2026-11-23/tuning-records-h100.json "$records"

"$peak" cuda vulkan 2>&1 | tee "$out/fragment-peak.txt"

shape=n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1
for i in 1 2 3 4 5; do
  "$weft" run --op conv2d-f16 --shape $shape --target vulkan --records measurements/h100-2026-11-23/tuning-records-h100.json 2>&1 | grep -i "kernel\|median" | sed "s/^/run $i: /"
done | tee "$out/vulkan-8x56-repeat.txt"

for s in m=1024,n=1024,k=1024 m=2039,n=2039,k=2039 m=4096,n=4096,k=4096; do
  "$weft" tune --op matmul-f16 --shape $s --target vulkan --records "$records" | tail -7
done 2>&1 | tee "$out/tune-vulkan-bk16.txt"
for hw in c=64,h=224,w=224,k=64 c=128,h=128,w=128,k=128 c=64,h=112,w=112,k=128; do
  "$weft" tune --op conv2d-f16 --shape n=1,$hw,r=3,s=3,stride=1,pad=1 --target vulkan --records "$records" | tail -7
done 2>&1 | tee -a "$out/tune-vulkan-bk16.txt"
