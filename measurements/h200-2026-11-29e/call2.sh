#!/usr/bin/env bash
# Call 2 of 2026-11-29 (fifth session): TinyLlama decode after the fitted gemv rule, Rotary and the skinny-row fusion rule.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
timeout 200 $W model generate zoo:llama --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 64 --iters 20 --kernels > $OUT/gen-b1.txt 2>&1
echo "exit $?"; grep -E "^(decode step|bandwidth|memory|prefill|first token)" $OUT/gen-b1.txt
echo "wall $(( $(date +%s) - T0 )) s"
