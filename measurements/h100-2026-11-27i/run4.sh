#!/usr/bin/env bash
# 2026-11-27i, call 4 (main 69b8468, the binary of call 3): issue 26's defaults figure with
# the 96-row tile in the rule: the 60 `mixed` shapes, the rule beside a 48-config tuning,
# the fixed configs of 2026-11-24 and cuBLAS (the script of 27f call 5, part 1).
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
C2048="wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0"
start=$(date +%s)
timeout 340 $W sweep --op matmul --target cuda --shapes mixed --sample 48 --budget-ms 10 \
  --fixed "default;tuned at 2048³:$C2048" --json $OUT/fp32-mixed-fixed.json > $OUT/fp32-mixed-fixed.txt 2>&1
echo "mixed rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/fp32-mixed-fixed.txt | tail -5
