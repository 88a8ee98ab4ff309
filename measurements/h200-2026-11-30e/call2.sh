#!/usr/bin/env bash
# Call 2 (fourteenth session): each skinny product asks L2, once it has stored its output, for the start of
# the next products' weights (WEFT_L2_AHEAD megabytes; model/src/ahead.rs), so that the memory idle under the
# cache write, the attention and each product's start pulls the next weight. TinyLlama-shaped fp16, batch 1,
# prompt 128, 4 layers, budgets 0/8/16/24/32 MB in alternated rounds; --check with 24 on small configs (f16
# and f32 batch 3); then 22 layers with the best budget (--kernels) and without.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
run() { # budget
  WEFT_L2_AHEAD=$1 timeout 90 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 \
    --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "a$1 $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}') WEFT_L2_AHEAD=$1"
}
for c in "--dtype f16" "--dtype f32 --batch 3"; do
  WEFT_L2_AHEAD=24 timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
    --intermediate 512 --vocab 1000 --target cuda $c --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
    | grep -E "^check|rror" | sed "s/^/ahead 24 $c: /" | tee -a $OUT/runs.txt
done
{
for r in 1 2 3; do
  for a in 0 8 16 24 32; do run $a; done
done
} | tee -a $OUT/runs.txt
echo "l4 $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
BEST=$(awk '$1 ~ /^a[0-9]+$/ {s[$1]+=$2; n[$1]++} END{for (k in s) print s[k]/n[k], k}' $OUT/runs.txt | sort -n | tee -a $OUT/runs.txt | head -1 | cut -d' ' -f2 | tr -d a)
echo "best at 4 layers: $BEST MB" | tee -a $OUT/runs.txt
WEFT_L2_AHEAD=$BEST timeout 170 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
  --new-tokens 32 --iters 20 --kernels > $OUT/gen22-ahead$BEST.txt 2>&1
echo "l22 ahead=$BEST $(grep -E '^decode step .*device' $OUT/gen22-ahead$BEST.txt)" | tee -a $OUT/runs.txt
WEFT_L2_AHEAD=0 timeout 120 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
  --new-tokens 32 --iters 20 > /tmp/g0.txt 2>&1
echo "l22 ahead=0 $(grep -E '^decode step .*device' /tmp/g0.txt)" | tee -a $OUT/runs.txt
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
