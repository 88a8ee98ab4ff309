#!/usr/bin/env bash
# Issue 26's fp16 figure again after the staging tile went over the stages and the rule
# weighed 3-stage wgmma tiles: the rule against 48 configs sampled from the whole space
# at the 60 `mixed` shapes (every timed config written out), with cuBLAS.
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
timeout 570 .dev/bin/weft sweep --op matmul-f16 --target cuda --shapes mixed --sample 48 --budget-ms 10 --trials \
  --json $OUT/f16-mixed.json > $OUT/f16-mixed.txt 2>&1; echo "rc=$? at $(( $(date +%s) - start )) s"; tail -4 $OUT/f16-mixed.txt
