#!/usr/bin/env bash
# Call 3 (fourteenth session): call 2's L2-ahead with the copy engine's bulk prefetch (cp.async.bulk.prefetch.L2,
# 8 KB a request spread over every block) instead of one prefetch.global.L2 a line, which made the step slower in
# proportion to the bytes. --check first (f16; f32 batch 3), then 4 layers at 0/8/24 MB alternated three times;
# 22 layers with the best budget only if it is not 0.
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
  echo "a$1 $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}') WEFT_L2_AHEAD=$1 (bulk)"
}
for c in "--dtype f16" "--dtype f32 --batch 3"; do
  WEFT_L2_AHEAD=24 timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
    --intermediate 512 --vocab 1000 --target cuda $c --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
    | grep -E "^check|rror" | sed "s/^/ahead 24 $c: /" | tee -a $OUT/runs.txt
done
{
for r in 1 2 3; do
  for a in 0 8 24; do run $a; done
done
} | tee -a $OUT/runs.txt
echo "l4 $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
BEST=$(awk '$1 ~ /^a[0-9]+$/ {s[$1]+=$2; n[$1]++} END{for (k in s) print s[k]/n[k], k}' $OUT/runs.txt | sort -n | tee -a $OUT/runs.txt | head -1 | cut -d' ' -f2 | tr -d a)
echo "best at 4 layers: $BEST MB" | tee -a $OUT/runs.txt
if [ "$BEST" != 0 ]; then
  WEFT_L2_AHEAD=$BEST timeout 170 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
    --new-tokens 32 --iters 20 --kernels > $OUT/gen22-ahead$BEST.txt 2>&1
  echo "l22 ahead=$BEST $(grep -E '^decode step .*device' $OUT/gen22-ahead$BEST.txt)" | tee -a $OUT/runs.txt
fi
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
