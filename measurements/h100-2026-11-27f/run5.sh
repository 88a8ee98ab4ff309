#!/usr/bin/env bash
# 2026-11-27f, call 5 (the binary of calls 3-4, main 6b0aa4e: the fp32 refit, PDL). Issue 26's defaults figure
# again with the refit rule, in one call: (1) the 60 `mixed` shapes, the rule beside a
# 48-config tuning, the fixed configs of 2026-11-24 (the template's fixed default and
# the config tuned at 2048³) and cuBLAS: "within 0.8x of tuned" and "never slower than
# the best fixed config"; (2) the input-size sensitivity figure, cubes 1984..2112, the
# rule beside the same fixed configs and cuBLAS.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
C2048="wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0"
start=$(date +%s)
timeout 300 $W sweep --op matmul --target cuda --shapes mixed --sample 48 --budget-ms 10 \
  --fixed "default;tuned at 2048³:$C2048" --json $OUT/fp32-mixed-fixed.json > $OUT/fp32-mixed-fixed.txt 2>&1
echo "mixed rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/fp32-mixed-fixed.txt | tail -5
timeout 240 $W sweep --op matmul --target cuda --shapes cubes:1984:2112 --sample 0 --budget-ms 10 \
  --fixed "default;tuned at 2048³:$C2048" --json $OUT/cubes.json > $OUT/cubes.txt 2>&1
echo "cubes rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/cubes.txt | tail -4
