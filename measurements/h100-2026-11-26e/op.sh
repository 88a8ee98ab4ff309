#!/usr/bin/env bash
# The attention op by the final rule (64 keys a step past 512 tokens) beside SDPA (flash),
# in one call, twice.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
{
for i in 1 2; do
  $W bench --ops attention-f16 --targets cuda --json $OUT/attn-bench-$i.json 2>&1 | grep -E "attention-f16/template" | head -6
  python3 scripts/torch_attention.py --seqs 128,512,2048 --heads 12 --dim 64 2>/dev/null > $OUT/sdpa-$i.jsonl
done
} 2>&1 | tee $OUT/op.txt
