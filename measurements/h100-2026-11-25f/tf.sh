#!/usr/bin/env bash
# First whole-transformer runs on the GPU: weft's rule-based schedules, before the
# fast reductions and the attention template.
export WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
for m in bert_base gpt2; do
  for dt in f32 f16; do
    echo "== $m seq 128 $dt cuda"
    $W model run zoo:$m --seq 128 --dtype $dt --target cuda --iters 20 2>&1 | grep -E "compiled|median|error" 
  done
done
echo "== bert_base per-kernel (f16)"
$W model bench zoo:bert_base --seq 128 --dtype f16 --target cuda 2>&1 | head -40
