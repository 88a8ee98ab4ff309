#!/usr/bin/env bash
# GPT-2's c_fc (the product with the tanh-GELU epilogue) at batch 8, sequence 512 and 128,
# with each wgmma tile forced by a record (`.dev/variants/*.json`, every other anchor by
# the rule): does a second block a multiprocessor (3 stages: about 106 KB of shared
# memory) hide the epilogue behind another block's main loop?
W=.dev/bin/weft
start=$(date +%s)
{
for s in 512 128; do
  for f in .dev/variants/*.json; do
    WEFT_RECORDS=$f timeout 60 $W model bench zoo:gpt2 --batch 8 --seq $s --dtype f16 --targets cuda > /tmp/k.txt 2>&1
    echo "s$s $(basename $f .json): $(sed -n 3p /tmp/k.txt | awk '{print $6, $7}') c_fc: $(grep 'c_fc.matmul' /tmp/k.txt | grep -oE '[0-9.]+ us' | head -4 | tr '\n' ' ') $(grep -m1 'c_fc.matmul' /tmp/k.txt | grep -oE 'fp16 matmul template: [0-9x]+ tile')"
  done
done
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/epilogue.txt
