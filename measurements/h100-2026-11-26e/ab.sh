#!/usr/bin/env bash
# Attention in registers, the rule's pick on CUDA (64 query rows and 128 keys a block): the
# op by the rule beside SDPA, then BERT-base and GPT-2 A/B against 1d126b6 (attention's
# scores and output through shared memory), both by the rule with no record, in one call;
# then the new binary's per-kernel tables at batch 1, sequence 128.
NEW=.dev/bin/weft
OLD=.dev/bin/weft-old
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
{
$NEW bench --ops attention-f16 --targets cuda --json $OUT/attn-bench.json 2>&1 | tail -8
python3 scripts/torch_attention.py --seqs 128,512,2048 --heads 12 --dim 64 2>/dev/null > $OUT/sdpa.jsonl
for m in bert_base gpt2; do
  for bs in "1 128" "2 37"; do
    set -- $bs
    echo "$m b$1 s$2: $(timeout 120 $NEW model run zoo:$m --batch $1 --seq $2 --dtype f16 --target cuda 2>&1 | grep -E '^(median|error)' | tr '\n' ' ')"
  done
done
echo "checks at $(( $(date +%s) - start )) s"
for m in bert_base gpt2; do
  for bs in "1 128" "8 128" "1 512" "8 512"; do
    set -- $bs
    for v in new old new old; do
      W=$NEW; [ $v = old ] && W=$OLD
      echo "$m b$1 s$2 $v: $(timeout 60 $W model bench zoo:$m --batch $1 --seq $2 --dtype f16 --targets cuda --no-kernels 2>&1 | sed -n 3p)"
    done
  done
done
echo "A/B at $(( $(date +%s) - start )) s"
for m in bert_base gpt2; do
  timeout 90 $NEW model bench zoo:$m --seq 128 --dtype f16 --targets cuda > $OUT/kernels-$m.txt 2>&1
  head -4 $OUT/kernels-$m.txt; grep -m2 Attention $OUT/kernels-$m.txt | cut -c1-90
done
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/ab.txt
