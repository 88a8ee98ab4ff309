#!/usr/bin/env bash
# Call 1: the persistent decode prototype (../persistent/persistent_decode.cu) in three
# grid shapes and four modes, two rounds; then weft's own 22-layer decode step in the
# same call, for the comparison.
set -u
root=$(pwd)
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv > $OUT/gpu.txt 2>&1
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc | head -1)
cd measurements/h200-2026-12-02c/persistent
for cfg in "512 1" "256 2" "256 1"; do set -- $cfg
  $NVCC -std=c++17 -arch=sm_90a -O3 -DTHREADS=$1 -DBPS=$2 persistent_decode.cu -o /tmp/pd_$1_$2 \
    -Xptxas -v > $OUT/ptxas_$1_$2.txt 2>&1 || echo "nvcc failed for $cfg"
done
for r in 1 2; do for cfg in 512_1 256_2 256_1; do for m in stream split persistent-after persistent; do
  echo "== $cfg $m round $r"; timeout 60 /tmp/pd_$cfg $m 22 200 || echo "exit $?"
done; done; done 2>&1 | tee $OUT/runs.txt
for m in split persistent; do echo "== 512_1 $m 4 layers"; timeout 60 /tmp/pd_512_1 $m 4 200; done 2>&1 | tee -a $OUT/runs.txt
cd "$root"
if [ -f .dev/pack.tar.xz ]; then
  FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
  for n in 22 4; do
    timeout 200 .dev/bin/weft model generate zoo:llama --layers $n --target cuda --dtype f16 --prompt-tokens 128 \
      --new-tokens 16 --iters 50 2>&1 | grep -E "^(decode step|prefill  |bandwidth|memory)" | sed "s/^/weft $n layers: /"
  done 2>&1 | tee $OUT/weft.txt
fi
