#!/usr/bin/env bash
# Prepared in 2026-11-27h, not yet run (the session's device budget was spent): the filter by TMA on the gathered wgmma
# path (the HWIO f16 filter read as the [R*S*C, K] matrix), ResNet-50 b8 f16 on CUDA:
# right against the float64 reference, and its time beside the gather-only binary
# (main e43c7c7), alternating.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
for r in 1 2; do for b in gather tma; do
  bin=.dev/bin/weft; [ $b = gather ] && bin=.dev/bin/weft-gather
  echo "resnet50 b8 f16 $b: $(timeout 40 $bin model run zoo:resnet50 --batch 8 --dtype f16 --target cuda 2>&1 | grep -E '^(median|error)' | cut -c1-100 | tr -s ' ' | tr '\n' ' ')"
done; done | tee $OUT/tma-filter.txt
# Per kernel, both: where the filter by TMA moves the 17 gathered anchors.
for b in gather tma; do
  bin=.dev/bin/weft; [ $b = gather ] && bin=.dev/bin/weft-gather
  timeout 60 $bin model bench zoo:resnet50 --batch 8 --dtype f16 --targets cuda > $OUT/bench-resnet50b8-$b.txt 2>&1
done
