#!/usr/bin/env bash
# Prepared in the thirteenth session (not run): silu(gate)·up stored by the gate/up product's kernel
# (WEFT_GATED_STORE=1, docs/gemv-template.md "A gated MLP's activation at the store") against the separate
# activation kernel, TinyLlama-shaped fp16, prompt 128: 4 layers at batch 1, three alternated rounds, with the
# one-wave block count for the gated product as a third row; then 22 layers for the winner with --kernels,
# batch 8 × 128 both ways, and --check on the small config. About 6 minutes on an H200.
# Run as: cp measurements/next/gated.sh .dev/gated.sh; run with carry [".gl", ".dev"]: OUT=$OUT bash .dev/gated.sh
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
WAVE="n=11264:threads=512,nt=4,unroll=8,shuffle=32"
run() { # label, layers, batch, gated, gemv
  WEFT_GATED_STORE=$4 WEFT_GEMV="$5" timeout 120 $W model generate zoo:llama --layers $2 --batch $3 --target cuda \
    --dtype f16 --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "$1 $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}') layers=$2 batch=$3 gated=$4 gemv=${5:-rule}"
}
{
for r in 1 2 3; do
  run base 4 1 0 ""
  run gated 4 1 1 ""
  run gwave 4 1 1 "$WAVE"
done
} | tee -a $OUT/runs.txt
BEST=$(awk '$1 ~ /^(base|gated|gwave)$/ {s[$1]+=$2; n[$1]++} END{for (k in s) print s[k]/n[k], k}' $OUT/runs.txt | sort -n | head -1 | cut -d' ' -f2)
echo "best at 4 layers: $BEST" | tee -a $OUT/runs.txt
G=0; V=""
case $BEST in gated) G=1;; gwave) G=1; V="$WAVE";; esac
WEFT_GATED_STORE=$G WEFT_GEMV="$V" timeout 60 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 \
  --intermediate 512 --vocab 1000 --target cuda --dtype f16 --prompt-tokens 40 --new-tokens 8 --iters 1 --check 2>&1 \
  | grep -E "^check" | tee -a $OUT/runs.txt
for g in $(printf "0\n%s\n" $G | sort -u); do
  WEFT_GATED_STORE=$g WEFT_GEMV="$([ $g = 1 ] && echo "$V")" timeout 150 $W model generate zoo:llama --target cuda \
    --dtype f16 --prompt-tokens 128 --new-tokens 32 --iters 20 --kernels > $OUT/gen22-gated$g.txt 2>&1
  echo "l22 gated=$g $(grep -E '^decode step .*device' $OUT/gen22-gated$g.txt)" | tee -a $OUT/runs.txt
done
run b8base 22 8 0 ""
run b8gated 22 8 1 ""
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
