#!/usr/bin/env bash
# Call 1 (thirteenth session): the decode step's skinny products with ptxas asked to leave room for a
# wave's blocks (WEFT_GEMV_RESIDENT=wave: all 8 of a step's loads in flight in q/k/v and o, offline) and
# the head in one wave (WEFT_GEMV selector n=32000), TinyLlama-shaped fp16, batch 1, prompt 128:
# 4 layers, every variant twice in alternating rounds; then 22 layers for the base and the best, the
# best with --kernels, and --check on a small config with the best.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
HEAD="n=32000:threads=512,nt=8,unroll=8,shuffle=32"
run() { # label, layers, resident, gemv
  WEFT_GEMV_RESIDENT="$3" WEFT_GEMV="$4" timeout 90 $W model generate zoo:llama --layers $2 --target cuda --dtype f16 \
    --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "$1 $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}') res=${3:-unset} gemv=${4:-rule}"
}
{
for r in 1 2; do
  run base 4 "" ""
  run wave 4 wave ""
  run head 4 "" "$HEAD"
  run res1 4 1 ""
  run both 4 wave "$HEAD"
done
} | tee -a $OUT/runs.txt
echo "l4 $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
BEST=$(awk '{s[$1]+=$2; n[$1]++} END{for (k in s) print s[k]/n[k], k}' $OUT/runs.txt | grep -v "^0 " | sort -n | head -1 | cut -d' ' -f2)
echo "best at 4 layers: $BEST" | tee -a $OUT/runs.txt
case $BEST in base) R=""; G="";; wave) R=wave; G="";; head) R=""; G="$HEAD";; res1) R=1; G="";; both) R=wave; G="$HEAD";; esac
WEFT_GEMV_RESIDENT="$R" WEFT_GEMV="$G" timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
  --intermediate 512 --vocab 1000 --target cuda --dtype f16 --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
  | grep -E "^check" | tee -a $OUT/runs.txt
timeout 150 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
  --new-tokens 32 --iters 20 --kernels > $OUT/gen22-base.txt 2>&1
echo "l22 base $(grep -E '^decode step .*device' $OUT/gen22-base.txt)" | tee -a $OUT/runs.txt
WEFT_GEMV_RESIDENT="$R" WEFT_GEMV="$G" timeout 150 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
  --new-tokens 32 --iters 20 --kernels > $OUT/gen22-best.txt 2>&1
echo "l22 $BEST $(grep -E '^decode step .*device' $OUT/gen22-best.txt)" | tee -a $OUT/runs.txt
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
