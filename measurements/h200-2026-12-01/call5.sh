#!/usr/bin/env bash
# Call 5 (sixteenth session): the batch-8 decode step's narrow products (q/k/v 2560 columns, o and down 2048:
# 80 and 64 blocks of 512 threads by the rule) on the few-column config the classifiers' 8-row products ran
# faster with (threads=256, nt=1: 8 columns a block, 320 and 256 blocks; 2026-11-30f call 6), forced by
# WEFT_GEMV, against the rule: TinyLlama-shaped fp16, batch 8, prompt 128, 4 layers, three alternated rounds.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
FEW="m=8,n=2048:threads=256,nt=1,unroll=4,shuffle=32;m=8,n=2560:threads=256,nt=1,unroll=4,shuffle=32"
run() { # name, WEFT_GEMV value
  WEFT_GEMV="$2" timeout 80 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --batch 8 \
    --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "$1 $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}')"
}
for r in 1 2 3; do run rule ""; run few "$FEW"; done | tee -a $OUT/runs.txt
WEFT_GEMV="$FEW" timeout 80 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --batch 8 \
  --prompt-tokens 128 --new-tokens 16 --iters 20 --kernels > $OUT/gen4-b8-few.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
