#!/usr/bin/env bash
# 2026-11-27h, call 2: wgmma over views with split-K (each grid layer gathers its own k
# range): the 64-row wgmma tiles (one warpgroup, 4 stages, n = 64/128/256) with every
# split factor, at ResNet-50's 8 distinct convolutions at batch 8 and its 23 at batch 1,
# beside cuDNN, every trial kept. Correctness of a split config first.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
W=.dev/bin/weft
for sk in 2 4 8; do
  echo "sk=$sk: $(timeout 30 $W run --op conv2d-f16-bias-relu --shape n=1,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1 --config mma=16,wm=4,wn=1,fm=1,fn=4,bk=64,g=8,vec=8,cp=0,st=4,fb=1,cc=0,wg=1,sk=$sk --target cuda 2>&1 | grep -E '^(median|error)' | tr -s ' ' | tr '\n' ' ')"
done | tee $OUT/checks.txt | cut -c1-220
B8="n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1;n=8,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=8,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1;n=8,c=256,h=14,w=14,k=1024,r=1,s=1,stride=1,pad=0;n=8,c=256,h=56,w=56,k=512,r=1,s=1,stride=2,pad=0;n=8,c=1024,h=14,w=14,k=256,r=1,s=1,stride=1,pad=0;n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1;n=8,c=256,h=56,w=56,k=64,r=1,s=1,stride=1,pad=0"
timeout 220 $W sweep --op conv2d-f16 --target cuda --shapes "$B8" --only wg=1,fm=1,st=4 --sample 21 --budget-ms 10 --trials \
  --json $OUT/conv-b8-split.json > $OUT/conv-b8-split.txt 2>&1
echo "b8 rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/conv-b8-split.txt | tail -3 | cut -c1-200
timeout 300 $W sweep --op conv2d-f16 --target cuda --shapes resnet50 --only wg=1,fm=1,st=4 --sample 21 --budget-ms 10 --trials \
  --json $OUT/conv-b1-split.json > $OUT/conv-b1-split.txt 2>&1
echo "b1 rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/conv-b1-split.txt | tail -3 | cut -c1-200
