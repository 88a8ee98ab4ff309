#!/usr/bin/env bash
# Call 6 (eighteenth session): the Vulkan fp16 implicit GEMM over views after the index forms (c7f7c0b): every config
# sampled timed (--trials) at batch-8 and batch-1 convolutions, to refit the views rule.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
S8="n=8,c=32,h=147,w=147,k=64,r=3,s=3,stride=1,pad=1;n=8,c=80,h=73,w=73,k=192,r=3,s=3,stride=1,pad=0;n=8,c=48,h=35,w=35,k=64,r=5,s=5,stride=1,pad=2;n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1;n=8,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1"
S1="n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1;n=1,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=1,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1;n=1,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1;n=1,c=24,h=14,w=14,k=64,r=3,s=3,stride=1,pad=1"
timeout 300 $W sweep --op conv2d-f16 --target vulkan --sample 36 --trials --budget-ms 4 --shapes "$S8" --json $OUT/vk8.json > $OUT/vk8.txt 2>&1
echo "b8 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
LEFT=$(( 560 - ($(date +%s) - T0) ))
timeout $LEFT $W sweep --op conv2d-f16 --target vulkan --sample 36 --trials --budget-ms 4 --shapes "$S1" --json $OUT/vk1.json > $OUT/vk1.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt; grep -E "rule|tuned" $OUT/vk8.txt $OUT/vk1.txt | head -40
