#!/usr/bin/env bash
# Prepared in 2026-11-27h, not yet run: why anchors run slower in place than alone (the
# gate at 196 tiles: ResNet-50 b8 f16 750 -> 770 us while its kernels alone summed
# 692 -> 663 us). Each kernel's duration inside one model run, L2 left as the model
# leaves it (ncu: no cache flush, clocks not locked), the gate at 196 and at none
# (`WEFT_XMIN` is gone from main: use two binaries built with
# WGMMA_VIEWS_MIN_TILES = 196 and = i64::MAX, `weft-196` and `weft-none`).
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
for b in none 196; do
  timeout 250 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \
    --csv .dev/bin/weft-$b model run zoo:resnet50 --batch 8 --dtype f16 --target cuda \
    > $OUT/ncu-inplace-$b.csv 2>&1
  echo "$b rc=$?"; tail -n 2 $OUT/ncu-inplace-$b.csv | cut -c1-200
done
