#!/usr/bin/env bash
# Call 4 (twenty-fourth session): call 3's multi-head export again, its script fixed (the sample
# past tensors took 4 KV heads); only the MHA A/B, two rounds, fused template against unfused.
set -u
export OUT=${OUT:?}
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
W=.dev/bin/weft
T=/tmp/mha
KV=32 timeout 120 python3 measurements/h200-2026-12-03b/call3/mha_past.py $T 4 128 16 > $OUT/export.txt 2>&1
g() { timeout 40 $W model generate "$@" --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 32 --iters 30; }
for r in 1 2; do
  for v in fused unfused; do
    extra=(); [ $v = unfused ] && extra=(--disable-pass attention)
    echo "== mha $v round $r"; g $T/model.onnx "${extra[@]}" 2>&1 | grep -E "^(decode step|weft:)"
  done
done > $OUT/ab.txt 2>&1
cat $OUT/ab.txt; tail -2 $OUT/export.txt
