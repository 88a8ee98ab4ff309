#!/usr/bin/env bash
# Issue 26 item 2's "never slower than the best fixed config": the fp32 rule now takes k
# steps of 8 for 4-warp tiles of 128 accumulators a thread (new) against the rule before
# it (old, a396359), at the 60 `mixed` shapes, with the two fixed configs of
# h100-2026-11-26c/fixed.sh, each binary in its own sweep, one call.
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
export WEFT_RECORDS=/tmp/none.json
C2048=wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0
start=$(date +%s)
for b in weft-old weft; do
  timeout 280 .dev/bin/$b sweep --shapes mixed --target cuda --sample 0 --fixed "default;tuned at 2048³:$C2048" \
    --json $OUT/fp32-rule-$b.json > $OUT/fp32-rule-$b.txt 2>&1
  echo "$b rc=$? at $(( $(date +%s) - start )) s"; tail -4 $OUT/fp32-rule-$b.txt
done
