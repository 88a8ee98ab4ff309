#!/usr/bin/env bash
# Split-K on the wgmma path: the products the models run, tuned over the space that now
# splits wgmma tiles; then both models tuned whole (`weft model tune`, whose candidates
# now include split wgmma tiles) and benched against the rule alone in the same call.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
for s in "m=128,n=768,k=3072" "m=128,n=768,k=768" "m=128,n=3072,k=768"; do
  echo "== $s"
  timeout 90 $W tune --op matmul-f16 --shape "$s" --target cuda --no-save 2>&1 | grep -A6 "^rank"
done > $OUT/split-tune.txt
echo "tunes at $(( $(date +%s) - start )) s"; cat $OUT/split-tune.txt | cut -c1-90,230-260
for m in bert_base gpt2; do
  timeout 200 $W model tune zoo:$m --seq 128 --dtype f16 --target cuda --records $OUT/records.json > $OUT/model-tune-$m.txt 2>&1
  tail -4 $OUT/model-tune-$m.txt
  echo "$m tuned at $(( $(date +%s) - start )) s"
done
for i in 1 2; do for m in bert_base gpt2; do
  echo "$m rule: $(timeout 60 $W model bench zoo:$m --seq 128 --dtype f16 --targets cuda --no-kernels 2>&1 | sed -n 3p)"
  echo "$m tuned: $(timeout 60 $W model bench zoo:$m --seq 128 --dtype f16 --targets cuda --no-kernels --records $OUT/records.json 2>&1 | sed -n 3p)"
done; done | tee $OUT/split-bench.txt
timeout 60 $W model bench zoo:gpt2 --seq 128 --dtype f16 --targets cuda --records $OUT/records.json > $OUT/kernels-gpt2-tuned.txt 2>&1
echo "done at $(( $(date +%s) - start )) s"
