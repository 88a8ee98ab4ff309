#!/usr/bin/env bash
# Call 3 (sixteenth session): the decode step's skinny products issuing their first step's loads of the weight
# (a constant of the run) before their wait for the kernel before them (WEFT_PREFETCH=loads; the kernel before
# each triggers their launch early), against main's default (0): --check first (f16; f32 batch 3), then 4 layers
# alternated three times, then 22 layers at 0 and at loads (with the per-kernel table).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
run() { # lead
  WEFT_PREFETCH=$1 timeout 90 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 \
    --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "p$1 $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}') WEFT_PREFETCH=$1"
}
for c in "--dtype f16" "--dtype f32 --batch 3"; do
  WEFT_PREFETCH=loads timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
    --intermediate 512 --vocab 1000 --target cuda $c --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
    | grep -E "^check|rror" | sed "s/^/loads $c: /" | tee -a $OUT/runs.txt
done
{
for r in 1 2 3; do
  for a in 0 loads; do run $a; done
done
} | tee -a $OUT/runs.txt
echo "l4 $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
timeout 150 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
  --new-tokens 32 --iters 20 > $OUT/gen22-base.txt 2>&1
echo "l22 prefetch=0 $(grep -E '^decode step .*device' $OUT/gen22-base.txt)" | tee -a $OUT/runs.txt
WEFT_PREFETCH=loads timeout 200 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
  --new-tokens 32 --iters 20 --kernels > $OUT/gen22-loads.txt 2>&1
echo "l22 prefetch=loads $(grep -E '^decode step .*device' $OUT/gen22-loads.txt)" | tee -a $OUT/runs.txt
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
