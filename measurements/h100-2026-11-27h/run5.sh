#!/usr/bin/env bash
# 2026-11-27h, call 5: the carveout was not it (call 4). Which gathered wgmma anchors
# cost the whole model: the gate's threshold (64x64 tiles of the product) set at run
# time by a temporary switch (WEFT_XMIN; 100000 = none, the old picks), alternating;
# Inception v3 per kernel with the gate (3 anchors) and without.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
{
for m in "resnet50 --batch 8" "inception_v3"; do
  for r in 1 2; do for x in 100000 196 400 1000; do
    echo "$m f16 xmin=$x: $(WEFT_XMIN=$x timeout 60 .dev/bin/weft model run zoo:$m --dtype f16 --target cuda 2>&1 | grep -E '^(median|error)' | cut -c1-60 | tr -s ' ' | tr '\n' ' ')"
  done; done
done
} > $OUT/gate.txt 2>&1; cat $OUT/gate.txt
echo "at $(( $(date +%s) - start )) s"
for x in 100000 196; do
  WEFT_XMIN=$x timeout 60 .dev/bin/weft model bench zoo:inception_v3 --dtype f16 --targets cuda > $OUT/bench-inception-xmin$x.txt 2>&1
done
echo "at $(( $(date +%s) - start )) s"
