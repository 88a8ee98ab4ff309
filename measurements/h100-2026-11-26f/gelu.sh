#!/usr/bin/env bash
# GELU through exp2 (tanh form as x·sigmoid(2u); erf's exp as exp2): BERT-base and GPT-2
# A/B against 9d2a980 (`weft-old`), by the rule with no record, alternating in one call; then
# GPT-2's per-kernel table at batch 8 / 512 (its c_fc carries the tanh-GELU epilogue).
NEW=.dev/bin/weft
OLD=.dev/bin/weft-old
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
{
for m in gpt2 bert_base; do
  for bs in "1 128" "8 512"; do
    set -- $bs
    for v in new old new old; do
      W=$NEW; [ $v = old ] && W=$OLD
      echo "$m b$1 s$2 $v: $(timeout 60 $W model bench zoo:$m --batch $1 --seq $2 --dtype f16 --targets cuda --no-kernels 2>&1 | sed -n 3p)"
    done
  done
done
echo "A/B at $(( $(date +%s) - start )) s"
for v in new old; do
  W=$NEW; [ $v = old ] && W=$OLD
  timeout 90 $W model bench zoo:gpt2 --batch 8 --seq 512 --dtype f16 --targets cuda > $OUT/gelu-kernels-gpt2-b8-s512-$v.txt 2>&1
  echo "$v c_fc: $(grep 'c_fc.matmul' $OUT/gelu-kernels-gpt2-b8-s512-$v.txt | grep -oE '[0-9.]+ us' | tr '\n' ' ')"
done
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/gelu.txt
