#!/usr/bin/env bash
# 2026-11-27d, call 9: issue 26's last fp16 conv miss (1x1 1024->512 at 14², 0.89x cuDNN
# tuned over the whole space in -27c) with the k test out of the loop: the whole space
# tuned again at both 14² layers with 1024 inputs, cuDNN beside.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
timeout 150 .dev/bin/weft sweep --op conv2d-f16 --target cuda --shapes "n=1,c=1024,h=14,w=14,k=256,r=1,s=1,stride=1,pad=0;n=1,c=1024,h=14,w=14,k=512,r=1,s=1,stride=1,pad=0" \
  --sample 600 --budget-ms 5 --json $OUT/conv-full.json > $OUT/conv-full.txt 2>&1
echo "rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/conv-full.txt | tail -4
