#!/usr/bin/env bash
# Call 1 (sixteenth session): the decode step's kernels beside the chain (WEFT_L2_BESIDE: a kernel that writes
# nothing, on a second stream forked after q/k/v and after gate/up, asking L2 for the next products' weights).
# --check first (f16; f32 batch 3) at 24 MB, then 4 layers at 0/8/16/24/40 MB alternated three times; 22 layers
# at 0 and at the best budget; then the zoo rows of issue 59's zoo-against-export check.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
run() { # budget
  WEFT_L2_BESIDE=$1 timeout 90 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 \
    --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "b$1 $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}') WEFT_L2_BESIDE=$1"
}
for c in "--dtype f16" "--dtype f32 --batch 3"; do
  WEFT_L2_BESIDE=24 timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
    --intermediate 512 --vocab 1000 --target cuda $c --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
    | grep -E "^check|rror" | sed "s/^/beside 24 $c: /" | tee -a $OUT/runs.txt
done
WEFT_L2_BESIDE=24 timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --prompt-tokens 128 \
  --new-tokens 16 --iters 5 --kernels > $OUT/gen4-beside24.txt 2>&1
{
for r in 1 2 3; do
  for a in 0 8 16 24 40; do run $a; done
done
} | tee -a $OUT/runs.txt
echo "l4 $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
BEST=$(awk '$1 ~ /^b[0-9]+$/ {s[$1]+=$2; n[$1]++} END{for (k in s) print s[k]/n[k], k}' $OUT/runs.txt | sort -n | tee -a $OUT/runs.txt | head -1 | cut -d' ' -f2 | tr -d b)
echo "best at 4 layers: $BEST MB" | tee -a $OUT/runs.txt
for b in 0 $BEST 0 $BEST; do
  WEFT_L2_BESIDE=$b timeout 170 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
    --new-tokens 32 --iters 20 > $OUT/gen22-beside$b.txt 2>&1
  echo "l22 beside=$b $(grep -E '^decode step .*device' $OUT/gen22-beside$b.txt)" | tee -a $OUT/runs.txt
done
echo "l22 done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
TIMEOUT=240 bash scripts/device-run.sh corpus zoo > /tmp/zoo.txt 2>&1; tail -5 /tmp/zoo.txt >> $OUT/runs.txt
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
