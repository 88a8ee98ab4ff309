#!/usr/bin/env bash
# 2026-11-27e, call 4: issue 26's fp16 convolution figure with PDL (dependents launched at
# block exit, call 3's binary): ResNet-50's 23 distinct layers at batch 1, the rule, 64
# configs of the space tuned a layer, cuDNN beside, in one process.
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
timeout 330 .dev/bin/weft sweep --op conv2d-f16 --target cuda --shapes resnet50 --sample 64 --budget-ms 5 \
  --json $OUT/conv-cuda-pdl.json > $OUT/conv-cuda-pdl.txt 2>&1; echo "sweep rc=$? at $(( $(date +%s) - start )) s"
grep -vE "^weft:" $OUT/conv-cuda-pdl.txt | tail -27 | cut -c1-170
