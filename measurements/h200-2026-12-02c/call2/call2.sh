#!/usr/bin/env bash
# Call 2: where the persistent prototype's step goes, stage by stage (a timeline of each
# block's arrival at each grid barrier), and what the barriers cost alone.
set -u
NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc | head -1)
cd measurements/h200-2026-12-02c/persistent
$NVCC -std=c++17 -arch=sm_90a -O3 -DTHREADS=512 -DBPS=1 persistent_decode.cu -o /tmp/pd_512_1 -Xptxas -v > $OUT/ptxas_512_1.txt 2>&1 || echo "nvcc failed"
for r in 1 2; do for m in barriers persistent-timed persistent-after-timed persistent split; do
  echo "== 512_1 $m round $r"; timeout 60 /tmp/pd_512_1 $m 22 200 || echo "exit $?"
done; done 2>&1 | tee $OUT/runs.txt
