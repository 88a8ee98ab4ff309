#!/usr/bin/env bash
# Call 9 (eighteenth session): BERT-base (zoo, seq 128, b1) on vulkan f16 per kernel under WEFT_WGSL_INDEX plain, fast,
# div, logic: which kernels the eager logic slowed.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
for v in plain fast div logic; do
  WEFT_WGSL_INDEX=$v timeout 60 $W model bench zoo:bert_base --targets vulkan --dtype f16 > $OUT/bert-$v.txt 2>&1
done
echo "done $(( $(date +%s) - T0 )) s" > $OUT/runs.txt
grep -h "^vulkan" $OUT/bert-*.txt
