#!/usr/bin/env bash
# 2026-11-27g, call 3: data for the fp16 tensor-core model at convolution shapes. The
# rule's picks at ResNet-50 batch 8 lose to tuning where its 3x3 convolutions run few
# tiles (layer3's 3x3 256->256 at 14^2: 64x64 whole 19.0 us, tuned 128x128 split 5 15.0;
# 27f/b8). Every config sampled at ResNet-50's distinct convolutions at batch 8 (the
# ones that matter) and batch 1 (`resnet50`), each config's time kept (--trials).
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
B8="n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1;n=8,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=8,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1;n=8,c=256,h=14,w=14,k=1024,r=1,s=1,stride=1,pad=0;n=8,c=256,h=56,w=56,k=512,r=1,s=1,stride=2,pad=0;n=8,c=1024,h=14,w=14,k=256,r=1,s=1,stride=1,pad=0;n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1;n=8,c=256,h=56,w=56,k=64,r=1,s=1,stride=1,pad=0"
timeout 280 .dev/bin/weft sweep --op conv2d-f16 --target cuda --shapes "$B8" --sample 96 --budget-ms 10 --trials \
  --json $OUT/conv-b8.json > $OUT/conv-b8.txt 2>&1
echo "b8 rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/conv-b8.txt | tail -12
timeout 290 .dev/bin/weft sweep --op conv2d-f16 --target cuda --shapes resnet50 --sample 64 --budget-ms 10 --trials \
  --json $OUT/conv-b1.json > $OUT/conv-b1.txt 2>&1
echo "b1 rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/conv-b1.txt | tail -5
