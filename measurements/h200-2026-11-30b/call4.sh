#!/usr/bin/env bash
# Call 4 (eleventh session): the decode step's split-KV attention with 2 (the rule), 4 and 8 warps a chunk
# block (WEFT_ATTN_SPLIT_WARPS), TinyLlama-shaped fp16, 4 layers at prompts 128 and 1024 with each kernel
# timed; then 22 layers at prompt 128 with 2 and 8; the greedy ids against the float64 reference (small config).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version.txt
for p in 128 1024; do for w in 2 4 8; do
  WEFT_ATTN_SPLIT_WARPS=$w timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --prompt-tokens $p \
    --new-tokens 16 --iters 10 --kernels > $OUT/gen4-p$p-w$w.txt 2>&1
  echo "p$p w$w $(grep -E '^decode step .*device' $OUT/gen4-p$p-w$w.txt | cut -c1-60) attn: $(grep 'split-KV' $OUT/gen4-p$p-w$w.txt | grep -oE '[0-9.]+ us ' | tr '\n' ' ')"
done; done | tee $OUT/warps4.txt
echo "l4 $(( $(date +%s) - T0 )) s"
for w in 8 2; do
  WEFT_ATTN_SPLIT_WARPS=$w timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
    --intermediate 512 --vocab 1000 --target cuda --dtype f32 --prompt-tokens 40 --new-tokens 8 --check 2>&1 | grep -E "^check" | sed "s/^/w$w /"
done | tee $OUT/check4.txt
echo "check $(( $(date +%s) - T0 )) s"
for w in 8 2; do
  WEFT_ATTN_SPLIT_WARPS=$w timeout 130 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
    --new-tokens 32 --iters 20 > $OUT/gen22-w$w.txt 2>&1
  echo "l22 w$w $(grep -E '^decode step .*device' $OUT/gen22-w$w.txt)"
done | tee -a $OUT/warps4.txt
echo "done $(( $(date +%s) - T0 )) s"
