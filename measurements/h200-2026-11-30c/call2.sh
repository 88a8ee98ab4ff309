#!/usr/bin/env bash
# Call 2 (twelfth session): the decode step's skinny products prefetching their weights into L2 before
# their wait for the kernel before them, and that kernel letting them launch at its start (WEFT_PREFETCH,
# model/src/pdl.rs). TinyLlama-shaped fp16, batch 1, prompt 128: 4 layers alternated 0/1 twice with each
# kernel timed; gemv configs under 1; 22 layers 0 and 1; the float64 reference's ids with 1.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version.txt
for r in 1 2; do for v in 0 1; do
  WEFT_PREFETCH=$v timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --prompt-tokens 128 \
    --new-tokens 16 --iters 20 --kernels > $OUT/gen4-p$v-r$r.txt 2>&1
  echo "l4 prefetch=$v r$r $(grep -E '^decode step .*device' $OUT/gen4-p$v-r$r.txt)"
done; done | tee $OUT/ab.txt
for cfg in "threads=512,nt=4,unroll=4,shuffle=32" "threads=256,nt=4,unroll=8,shuffle=32" "threads=1024,nt=4,unroll=8,shuffle=32"; do
  WEFT_PREFETCH=1 WEFT_GEMV=$cfg timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 \
    --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "l4 prefetch=1 $cfg $(grep -E '^decode step .*device' /tmp/g.txt)"
done | tee -a $OUT/ab.txt
WEFT_PREFETCH=1 WEFT_GEMV_SPLIT=rule timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 \
  --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
echo "l4 prefetch=1 split=rule $(grep -E '^decode step .*device' /tmp/g.txt)" | tee -a $OUT/ab.txt
echo "l4 $(( $(date +%s) - T0 )) s"
for d in f32 f16; do for b in 1 3; do
  WEFT_PREFETCH=1 timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
    --intermediate 512 --vocab 1000 --target cuda --dtype $d --batch $b --prompt-tokens 40 --new-tokens 8 --check 2>&1 \
    | grep -E "^check" | sed "s/^/$d b$b /"
done; done | tee $OUT/check.txt
echo "check $(( $(date +%s) - T0 )) s"
for v in 1 0; do
  WEFT_PREFETCH=$v timeout 130 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
    --new-tokens 32 --iters 20 --kernels > $OUT/gen22-p$v.txt 2>&1
  echo "l22 prefetch=$v $(grep -E '^decode step .*device' $OUT/gen22-p$v.txt)"
done | tee -a $OUT/ab.txt
echo "done $(( $(date +%s) - T0 )) s"
