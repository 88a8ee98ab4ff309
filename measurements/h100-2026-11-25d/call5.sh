#!/usr/bin/env bash
# Issue 26 item 2: the final rule (cost model refitted on all measured tiles) against
# tuning over the 60 `mixed` shapes, both halves.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
C2048=wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0
for P in 1 2; do
timeout 250 $W sweep --shapes mixed --part $P/2 --target cuda --sample 64 --fixed "default;tuned at 2048³:$C2048" --json $OUT/mixed-$P.json > $OUT/mixed-$P.txt 2>&1; echo "mixed$P rc=$?"
tail -4 $OUT/mixed-$P.txt
done
