#!/usr/bin/env bash
# wgmma anchors: linear layers over stored f16 operands read them as the fp16 template's
# placeholders (TMA + wgmma on sm_90a, epilogues fused), and attention's context stored
# [b, s, h, d]. A/B against the binary of ca0441f (mma.sync anchors), both by the rule
# with no record, alternating in one call; then the new one's per-kernel tables and its
# error against the float64 reference on CUDA.
NEW=.dev/bin/weft
OLD=.dev/bin/weft-old
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
for m in bert_base gpt2; do
  for b in 1 2; do
    s=128; [ $b = 2 ] && s=37
    timeout 120 $NEW model run zoo:$m --batch $b --seq $s --dtype f16 --target cuda > $OUT/run-$m-b$b-s$s.txt 2>&1
    echo "$m b$b s$s: $(grep -E '^(median|error)' $OUT/run-$m-b$b-s$s.txt | tr '\n' ' ')"
  done
done
echo "runs at $(( $(date +%s) - start )) s"
for m in bert_base gpt2; do
  for bs in "1 128" "8 128" "1 512" "8 512"; do
    set -- $bs
    for i in 1 2; do
      for v in new old; do
        W=$NEW; [ $v = old ] && W=$OLD
        f=$OUT/ab-$m-b$1-s$2-$v$i.txt
        timeout 60 $W model bench zoo:$m --batch $1 --seq $2 --dtype f16 --targets cuda --no-kernels > $f 2>&1
        echo "$m b$1 s$2 $v$i: $(sed -n 3p $f)"
      done
    done
  done
done
echo "A/B at $(( $(date +%s) - start )) s"
for m in bert_base gpt2; do
  timeout 90 $NEW model bench zoo:$m --seq 128 --dtype f16 --targets cuda > $OUT/kernels-$m.txt 2>&1
  timeout 90 $OLD model bench zoo:$m --seq 128 --dtype f16 --targets cuda > $OUT/kernels-$m-old.txt 2>&1
done
echo "done at $(( $(date +%s) - start )) s"
