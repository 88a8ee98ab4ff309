#!/usr/bin/env bash
# 2026-11-27i, call 3 (main 69b8468: the 96-row tile in the space and the rule, unsplit,
# over reductions of 1024 or more): issue 26's input-size figure from one call.
#  1. cubes 1984..2112 step 1: the rule beside the fixed configs of 2026-11-24 and cuBLAS;
#  2. the odd cubes 1985..2105 step 8 (the sizes whose rows are not 32-byte aligned),
#     each also tuned over 24 configs of the space.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
C2048="wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0"
start=$(date +%s)
timeout 300 $W sweep --op matmul --target cuda --shapes cubes:1984:2112 --sample 0 --budget-ms 10 \
  --fixed "default;tuned at 2048³:$C2048" --json $OUT/cubes.json > $OUT/cubes.txt 2>&1
echo "cubes rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/cubes.txt | tail -4
timeout 230 $W sweep --op matmul --target cuda --shapes cubes:1985:2112:8 --sample 24 --budget-ms 10 \
  --fixed "default;tuned at 2048³:$C2048" --json $OUT/cubes-odd-tuned.json > $OUT/cubes-odd-tuned.txt 2>&1
echo "odd rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/cubes-odd-tuned.txt | tail -4
