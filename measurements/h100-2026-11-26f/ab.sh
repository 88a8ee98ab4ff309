#!/usr/bin/env bash
# BERT-base and GPT-2 A/B against d0717a5 (attention in registers, one K/V stage, exp),
# both by the rule with no record, alternating in one call; then the new binary's
# per-kernel tables of GPT-2 at batch 8 (where it trails torch.compile) and batch 1.
NEW=.dev/bin/weft
OLD=.dev/bin/weft-old
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
{
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
for bs in "8 128" "8 512" "1 128"; do
  set -- $bs
  timeout 90 $NEW model bench zoo:gpt2 --batch $1 --seq $2 --dtype f16 --targets cuda > $OUT/kernels-gpt2-b$1-s$2.txt 2>&1
  head -4 $OUT/kernels-gpt2-b$1-s$2.txt
done
echo "b8 bert at $(( $(date +%s) - start )) s"
timeout 90 $NEW model bench zoo:bert_base --batch 8 --seq 128 --dtype f16 --targets cuda > $OUT/kernels-bert_base-b8-s128.txt 2>&1
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/ab.txt
