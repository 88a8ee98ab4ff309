#!/usr/bin/env bash
# Call 1 (fourteenth session): the decode step's knobs built and left off, timed against main's defaults in
# alternated rounds, TinyLlama-shaped fp16, batch 1, prompt 128, 4 layers: silu(gate)·up at the gate/up
# product's store (WEFT_GATED_STORE=1; `gwave`: with the one-wave block count for the gated product), the
# split-KV attention combined by its last-arriving chunk (WEFT_ATTN_COMBINE=1), and the products prefetching
# their weight into L2 before they wait (WEFT_PREFETCH=1) under the thirteenth session's launch bounds.
# Then --check on a small config with everything that won, and 22 layers with it (--kernels).
# Run as: cp measurements/h200-2026-11-30e/call1.sh .dev/call1.sh; carry [".gl", ".dev"]: OUT=$OUT bash .dev/call1.sh
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
WAVE="n=11264:threads=512,nt=4,unroll=8,shuffle=32"
run() { # label, then the environment of the run
  local label=$1; shift
  env "$@" timeout 90 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 \
    --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "$label $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}') $*"
}
{
for r in 1 2 3; do
  run base WEFT_GATED_STORE=0
  run gated WEFT_GATED_STORE=1
  run gwave WEFT_GATED_STORE=1 WEFT_GEMV=$WAVE
  run combine WEFT_ATTN_COMBINE=1
  run prefetch WEFT_PREFETCH=1
done
} | tee -a $OUT/runs.txt
echo "l4 $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
mean() { awk -v k=$1 '$1 == k {s+=$2; n++} END{if (n) printf "%.2f", s/n; else print 1e9}' $OUT/runs.txt; }
B=$(mean base); E=()
G=$(mean gated); V=$(mean gwave)
if awk -v g=$G -v v=$V -v b=$B 'BEGIN{exit !(g < b - 1 || v < b - 1)}'; then
  E+=(WEFT_GATED_STORE=1)
  awk -v g=$G -v v=$V 'BEGIN{exit !(v < g - 0.5)}' && E+=(WEFT_GEMV=$WAVE)
fi
awk -v c=$(mean combine) -v b=$B 'BEGIN{exit !(c < b - 1)}' && E+=(WEFT_ATTN_COMBINE=1)
awk -v p=$(mean prefetch) -v b=$B 'BEGIN{exit !(p < b - 1)}' && E+=(WEFT_PREFETCH=1)
echo "means: base $B gated $G gwave $V combine $(mean combine) prefetch $(mean prefetch); kept: ${E[*]:-none}" | tee -a $OUT/runs.txt
env "${E[@]}" timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
  --intermediate 512 --vocab 1000 --target cuda --dtype f16 --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
  | grep -E "^check" | tee -a $OUT/runs.txt
env WEFT_GATED_STORE=1 timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
  --intermediate 512 --vocab 1000 --target cuda --dtype f32 --batch 3 --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
  | grep -E "^check" | sed 's/^/gated f32 b3 /' | tee -a $OUT/runs.txt
env "${E[@]}" timeout 170 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens 128 \
  --new-tokens 32 --iters 20 --kernels > $OUT/gen22-kept.txt 2>&1
echo "l22 ${E[*]:-none} $(grep -E '^decode step .*device' $OUT/gen22-kept.txt)" | tee -a $OUT/runs.txt
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
