#!/usr/bin/env bash
# 2026-11-27i, call 5 (main e7deb3f: the 96-row tile and the eight-warp tile over
# unaligned rows in the rule): the cubes 1984..2112 again, the rule beside the fixed
# configs of 2026-11-24 and cuBLAS (issue 26's input-size figure).
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
C2048="wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0"
start=$(date +%s)
timeout 300 $W sweep --op matmul --target cuda --shapes cubes:1984:2112 --sample 0 --budget-ms 10 \
  --fixed "default;tuned at 2048³:$C2048" --json $OUT/cubes-2.json > $OUT/cubes-2.txt 2>&1
echo "cubes rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/cubes-2.txt | tail -4
