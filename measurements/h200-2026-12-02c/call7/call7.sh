#!/usr/bin/env bash
# Call 7 (twenty-second session): PyTorch's TorchScript exports of GPT-2 and Llama (the corpus
# fixtures, weights filled by onnx/tests/corpus_fill.py, their dim_param `sequence` kept), imported
# with `sequence` symbolic (sizes read with Shape followed by onnx/src/import/taint.rs), compiled once
# for 1..64 and run at 1, 17 and 64 tokens on cuda and vulkan, f32 and f16, each run against
# weft's float64 reference of the same file imported at that length.
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
$W --version > $OUT/version.txt
for m in gpt2_torchscript llama_torchscript; do for t in cuda vulkan; do for d in f32 f16; do
  echo "== $m $t $d"
  timeout 120 $W model run .dev/sym/$m.onnx --target $t --dtype $d --dim sequence=1..64 \
    --dim-value sequence=1,17,64 2>&1 | grep -E "^(symbol|compiled|run|weft:)"
done; done; done 2>&1 | tee $OUT/runs.txt
