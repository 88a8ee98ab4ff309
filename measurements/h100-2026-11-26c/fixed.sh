#!/usr/bin/env bash
# Issue 26 item 2's last clause after the tuner fix: the fp32 rule beside the fixed
# configs of before the rule (the template's fixed default, and the config tuned at
# 2048^3) at the 60 `mixed` shapes, no tuning (each config timed in full, in one process).
export WEFT_RECORDS=/tmp/none.json
C2048=wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0
timeout 400 .dev/bin/weft sweep --shapes mixed --target cuda --sample 0 --fixed "default;tuned at 2048³:$C2048" \
  --json $OUT/fp32-fixed.json > $OUT/fp32-fixed.txt 2>&1; echo "rc=$?"; tail -4 $OUT/fp32-fixed.txt
