#!/usr/bin/env bash
# Issue 26 item 2: every rule-candidate tile (k step 16, 4x8 lanes, no register cap) with
# the splits that can pay, timed at each shape of `mixed`: the data the rule is fitted on.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
P=${1:-1/2}
N=$(echo $P | tr / -)
timeout ${2:-560} $W sweep --shapes mixed --part $P --target cuda --sample 1000 --only bk=16,lm=4,mb=0 --trials --budget-ms 10 --json $OUT/fit-$N.json > $OUT/fit-$N.txt 2>&1; echo "fit $P rc=$?"
tail -4 $OUT/fit-$N.txt
