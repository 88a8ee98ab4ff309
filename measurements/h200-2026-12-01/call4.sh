#!/usr/bin/env bash
# Call 4 (sixteenth session): Inception-v3's three large 3x3 convolutions at batch 8 (fp16 NHWC), the ones the
# per-kernel table of call 2 puts furthest behind cuDNN (Conv2d_2a 51.7 us, 2b 49.2, 4a 79.0 against cuDNN's
# 22.8, 22.2, 35.0 in Inductor's call-1 table of 2026-11-30f): the rule's config beside a tuning over the whole
# space (every trial kept) and cuDNN, to see whether a config of weft's space closes it or the gather does not.
set -u
export OUT=${OUT:?}
FRESH=1 TIMEOUT=300 bash scripts/device-run.sh sweep inception-b8-3x3 --op conv2d-f16 --target cuda --sample 48 \
  --budget-ms 4 --trials --shapes "n=8,c=32,h=149,w=149,k=32,r=3,s=3,stride=1,pad=0;n=8,c=32,h=147,w=147,k=64,r=3,s=3,stride=1,pad=1;n=8,c=80,h=73,w=73,k=192,r=3,s=3,stride=1,pad=0"
tail -30 $OUT/inception-b8-3x3.txt
