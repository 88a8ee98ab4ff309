#!/usr/bin/env bash
# Call 4: the grid barrier's arrival and polling moved to a warp that streams no weights
# (SYNCWARP=1), so that its fence waits for no prefetch in flight; ring and register forms.
set -u
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc | head -1)
cd measurements/h200-2026-12-02c/persistent
for cfg in "544 3 1" "512 3 1" "512 3 0"; do set -- $cfg
  $NVCC -std=c++17 -arch=sm_90a -O3 -DTHREADS=$1 -DBPS=1 -DRING=$2 -DSYNCWARP=$3 persistent_decode.cu \
    -o /tmp/pr_$1_$2_$3 -Xptxas -v > $OUT/ptxas_$1_$2_$3.txt 2>&1 || echo "nvcc failed for $cfg"
done
for r in 1 2; do for cfg in 544_3_1 512_3_1 512_3_0; do
  for m in split persistent persistent-timed persistent-ring persistent-ring-timed; do
  echo "== $cfg $m round $r"; timeout 60 /tmp/pr_$cfg $m 22 200 || echo "exit $?"
done; done; done 2>&1 | grep -v "^device\|^stage kernel" | tee $OUT/runs.txt
