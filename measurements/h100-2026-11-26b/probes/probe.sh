#!/usr/bin/env bash
# Issue 28, first call: what a launch costs on wgpu/Vulkan vs CUDA, and where the slow
# Vulkan processes come from; BERT-base per kernel on both targets.
P=.dev/bin/vulkan_probe
W=.dev/bin/weft
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,pstate --format=csv
echo "== dispatch"
$P dispatch cuda vulkan > $OUT/dispatch.txt 2>&1; tail -3 $OUT/dispatch.txt
shape=n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1
echo "== slow, vulkan alone, 10 processes"
for i in $(seq 1 10); do echo "## process $i"; $P slow conv2d-f16 $shape 2>&1; done > $OUT/slow.txt
grep -c "" $OUT/slow.txt
echo "== slow, cuda first, 6 processes"
for i in $(seq 1 6); do echo "## process $i"; $P slow --cuda-first conv2d-f16 $shape 2>&1; done > $OUT/slow-cuda-first.txt
echo "== slow, vulkan alone, matmul-f16 1024, 4 processes"
for i in $(seq 1 4); do echo "## process $i"; $P slow matmul-f16 m=1024,n=1024,k=1024 2>&1; done > $OUT/slow-mm.txt
echo "== bert"
for s in 128 512; do
  $W model bench zoo:bert_base --seq $s --dtype f16 --targets cuda,vulkan --records .dev/records-bert_base.json > $OUT/bert-$s.txt 2>&1
  head -5 $OUT/bert-$s.txt
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,pstate --format=csv
