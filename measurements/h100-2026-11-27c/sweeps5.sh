#!/usr/bin/env bash
# What the unswitched summing kernel does beyond fp32 (old: d640bf4's binary; new: 71f3b6b's):
# the fp16 products whose split sums have a bound guard (outputs not a multiple of 256),
# the rule's pick alone with 8 configs tuned beside, and ResNet-50 in fp16 at batch 1
# (its 1×1000×2048 classifier is split) on CUDA, old and new alternating.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
S="m=1,n=1000,k=2048;m=49,n=512,k=4608;m=16,n=1000,k=4096;m=197,n=768,k=3072"
for b in old new; do
  w=.dev/bin/weft; [ $b = old ] && w=.dev/bin/weft-old
  timeout 60 $w sweep --op matmul-f16 --target cuda --shapes "$S" --sample 8 --budget-ms 5 \
    --json $OUT/e-f16-$b.json > $OUT/e-f16-$b.txt 2>&1
  echo "e $b rc=$? at $(( $(date +%s) - start )) s"; grep -E "^m=" $OUT/e-f16-$b.txt
done
for b in old new new old; do
  w=.dev/bin/weft; [ $b = old ] && w=.dev/bin/weft-old
  echo "resnet50 f16 cuda $b: $(timeout 60 $w model run zoo:resnet50 --dtype f16 --target cuda --iters 30 2>&1 | grep -E '^(median|error)' | tr '\n' ' ')"
done
echo "done at $(( $(date +%s) - start )) s"
