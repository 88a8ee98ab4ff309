#!/usr/bin/env bash
# The row rule's shallower trees (64 threads a row of 768, 4 rows a block): BERT-base and
# GPT-2 A/B against ff32842 (the same but for the row rule; `weft-old`), both by
# the rule with no record, alternating in one call; GPT-2's per-kernel tables at batch 8;
# then attention tuned at GPT-2's batch-8 shapes (96 heads, causal).
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
  timeout 90 $NEW model bench zoo:gpt2 --batch $1 --seq $2 --dtype f16 --targets cuda > $OUT/rows-kernels-gpt2-b$1-s$2.txt 2>&1
  grep -m3 "ln_1" $OUT/rows-kernels-gpt2-b$1-s$2.txt | cut -c1-40,190-400
done
echo "kernels at $(( $(date +%s) - start )) s"
for s in 512 128; do
  echo "== tune bh=96 s=$s causal=1"
  timeout 100 $NEW tune --op attention-f16 --shape bh=96,s=$s,t=$s,d=64,causal=1 --target cuda --no-save > $OUT/tune-96-$s.txt 2>&1
  grep -E "^ *[0-9]+ " $OUT/tune-96-$s.txt | head -5 | cut -c1-60,170-260
  grep -iE "rule|default" $OUT/tune-96-$s.txt | head -2 | cut -c1-300
done
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/rows.txt
