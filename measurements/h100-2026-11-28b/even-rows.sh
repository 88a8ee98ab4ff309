#!/usr/bin/env bash
# Prepared 2026-11-28, not yet run: 64-bit global accesses in the fp32 template where
# rows are 8-byte aligned (k or n = 2 mod 4; NVRTC for sm_90 at 2046³: 12 `ld.global.v2`
# in the PTX of the rule's kernel, 128 registers, no spills). Needs `weft-base` (main
# before it, e.g. 2026-11-28's aligned-copies commit) and `weft` packed in .dev/bin.
# Predicted: the k = 2 mod 4 cubes (2034, 2038, 2042, ...) from the scalar group's
# ~410 µs toward the 16-byte group's ~388 µs on an H100 (5–8%); the odd sizes unchanged.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
for b in base new base new; do
  bin=.dev/bin/weft; [ $b = base ] && bin=.dev/bin/weft-base
  timeout 100 $bin sweep --op matmul --target cuda --shapes cubes:2030:2050 --sample 0 --budget-ms 10 \
    --json $OUT/even-$b.json > $OUT/even-$b.txt 2>&1
  echo "$b rc=$?"; grep -E "^m=20(34|38|42|46|39|40)" $OUT/even-$b.txt
done
