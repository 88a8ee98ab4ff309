#!/usr/bin/env bash
# Call 3: the ring form (each warp's next jobs' weights in flight into its own shared
# memory across stages and barriers) in three shapes, against the split and register forms.
set -u
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc | head -1)
cd measurements/h200-2026-12-02c/persistent
for cfg in "512 3" "384 4" "256 6"; do set -- $cfg
  $NVCC -std=c++17 -arch=sm_90a -O3 -DTHREADS=$1 -DBPS=1 -DRING=$2 persistent_decode.cu -o /tmp/pr_$1_$2 \
    -Xptxas -v > $OUT/ptxas_$1_$2.txt 2>&1 || echo "nvcc failed for $cfg"
done
for r in 1 2; do for cfg in 512_3 384_4 256_6; do for m in split persistent persistent-ring persistent-ring-timed; do
  echo "== $cfg $m round $r"; timeout 60 /tmp/pr_$cfg $m 22 200 || echo "exit $?"
done; done; done 2>&1 | tee $OUT/runs.txt
