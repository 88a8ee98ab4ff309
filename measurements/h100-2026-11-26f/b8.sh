#!/usr/bin/env bash
# GPT-2 at batch 8: the attention rule's 64 keys a step past a block per multiprocessor,
# A/B against d09cb05 (`weft-old`, 128 keys) by the rule with no record; then what
# `weft model tune` finds for the products at batch 8 (sequence 128 and 512), and the
# model with those records beside the rule, alternating in one call.
NEW=.dev/bin/weft
OLD=.dev/bin/weft-old
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
{
for s in 128 512; do
  for v in new old new old; do
    W=$NEW; [ $v = old ] && W=$OLD
    echo "gpt2 b8 s$s $v: $(timeout 60 $W model bench zoo:gpt2 --batch 8 --seq $s --dtype f16 --targets cuda --no-kernels 2>&1 | sed -n 3p)"
  done
done
echo "A/B at $(( $(date +%s) - start )) s"
for s in 512 128; do
  timeout 200 $NEW model tune zoo:gpt2 --batch 8 --seq $s --dtype f16 --target cuda --records $OUT/records-gpt2-b8.json > $OUT/model-tune-b8-s$s.txt 2>&1
  tail -12 $OUT/model-tune-b8-s$s.txt | cut -c1-250
  echo "tune s$s at $(( $(date +%s) - start )) s"
done
for s in 128 512; do
  for v in rule tuned rule tuned; do
    R=/tmp/none.json; [ $v = tuned ] && R=$OUT/records-gpt2-b8.json
    echo "gpt2 b8 s$s $v: $(WEFT_RECORDS=$R timeout 60 $NEW model bench zoo:gpt2 --batch 8 --seq $s --dtype f16 --targets cuda --no-kernels 2>&1 | sed -n 3p)"
  done
done
WEFT_RECORDS=$OUT/records-gpt2-b8.json timeout 90 $NEW model bench zoo:gpt2 --batch 8 --seq 512 --dtype f16 --targets cuda > $OUT/kernels-gpt2-b8-s512-tuned.txt 2>&1
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/b8.txt
