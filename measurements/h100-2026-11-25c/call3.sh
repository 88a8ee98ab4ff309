#!/usr/bin/env bash
# Issue 26 item 2: (1) the splits of the small tiles the new rule may take, at the shapes
# where they can pay; (2) the rule (cost model) against tuning over `mixed`, part 1/2.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
SHAPES=$(sed -n 1p .dev/smallsplit.txt); FIXED=$(sed -n 2p .dev/smallsplit.txt)
timeout 200 $W sweep --shapes "$SHAPES" --target cuda --sample 0 --fixed "$FIXED" --trials --budget-ms 10 --json $OUT/small-splits.json > $OUT/small-splits.txt 2>&1; echo "small rc=$?"
tail -2 $OUT/small-splits.txt
C2048=wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0
timeout 330 $W sweep --shapes mixed --part ${1:-1/2} --target cuda --sample 64 --fixed "default;tuned at 2048³:$C2048" --trials --json $OUT/mixed-1.json > $OUT/mixed-1.txt 2>&1; echo "mixed rc=$?"
tail -4 $OUT/mixed-1.txt
