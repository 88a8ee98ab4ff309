#!/usr/bin/env bash
# The fp16 matmul figures of docs/results-history.md in one run on the GPU machine: cuBLAS's
# HGEMM through PyTorch, then weft's tuner on CUDA (wmma) and Vulkan (cooperative
# matrices), the same-config comparison, and compute-sanitizer at odd shapes.
#   bash scripts/matmul-f16-figures.sh OUT
set -u
out=$1; weft=${WEFT:-.dev/bin/weft}
export WEFT_RECORDS=$out/records.json
python3 scripts/matmul-f16-cublas-reference.py > $out/cublas.txt 2>&1
for n in 1024 2039 4096; do
  for t in cuda vulkan; do
    echo "== $t m=n=k=$n"; $weft tune --op matmul-f16 --shape m=$n,n=$n,k=$n --target $t 2>&1 | grep -v '^\s*$' | head -14
  done
done > $out/tune.txt
# The CUDA-tuned config of each size, run on Vulkan (the same template, the same config).
for n in 1024 2039 4096; do
  cfg=$(awk -v n="== cuda m=n=k=$n" '$0==n{f=1;next} f&&/^best /{print $2; exit}' $out/tune.txt)
  echo "== vulkan with cuda's config $cfg m=n=k=$n"
  $weft run --op matmul-f16 --shape m=$n,n=$n,k=$n --target vulkan --config "$cfg" 2>&1 | tail -3
done > $out/same-config-vulkan.txt
for tool in memcheck racecheck; do
  for s in m=37,n=29,k=53 m=1,n=1,k=1 m=130,n=17,k=200 m=257,n=263,k=269; do
    echo "== $tool $s"; compute-sanitizer --tool $tool --print-limit 5 $weft run --op matmul-f16 --shape $s --target cuda --iters 1 2>&1 | tail -3
  done
done > $out/sanitizer.txt
