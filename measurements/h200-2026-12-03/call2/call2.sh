#!/usr/bin/env bash
# Call 2 (twenty-third session): (1) what the ONNX path's decode step gains with its attention
# left unfused (`--disable-pass attention`: two products and a softmax) against the prefill template
# it runs at 32 heads of one row, on a 4-layer TinyLlama-shaped export, beside zoo:llama at 4 layers,
# alternated twice; (2) a symbolic model bounded by its length (item 1): zoo:bert_base compiled once
# for seq 1..512 and run at 16, 128 and 512 tokens on cuda f16, with and without
# `--disable-pass symbol-bound` (host time of each checked run: uploads, every kernel waited for).
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
T=/tmp/tl4
timeout 200 python3 measurements/h200-2026-12-03/call1/tinyllama_past.py $T 4 128 16 > $OUT/export.txt 2>&1
for r in 1 2; do
  for v in default attention; do
    extra=(); [ $v = attention ] && extra=(--disable-pass attention)
    echo "== onnx $v round $r"
    timeout 100 $W model generate $T/model.onnx --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 32 \
      --iters 30 "${extra[@]}" 2>&1 | grep -E "^(decode step|prefill |weft:)"
  done
  echo "== zoo round $r"
  timeout 100 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 32 \
    --iters 30 2>&1 | grep -E "^(decode step|prefill )"
done > $OUT/ab.txt 2>&1
for v in bound whole; do
  extra=(); [ $v = whole ] && extra=(--disable-pass symbol-bound)
  echo "== bert symbolic $v"
  timeout 120 $W model run zoo:bert_base --dim seq=1..512 --dim-value seq=16,128,512,16 --target cuda --dtype f16 \
    "${extra[@]}" 2>&1 | grep -E "^(symbol|compiled|run|weft:)"
done > $OUT/symbolic.txt 2>&1
cat $OUT/ab.txt $OUT/symbolic.txt
