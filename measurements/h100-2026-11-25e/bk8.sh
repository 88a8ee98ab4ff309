#!/usr/bin/env bash
# Issue 26 item 2 (next step): every rule-candidate tile with a k step of 8 (4x8 lanes, no
# register cap), with the splits that can pay, at each shape of `mixed`: the data a k-step
# (pipeline fill) term of the cost model is fitted on.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
for P in 1 2; do
timeout 270 $W sweep --shapes mixed --part $P/2 --target cuda --sample 1000 --only bk=8,lm=4,mb=0 --trials --budget-ms 5 --json $OUT/bk8-$P-2.json > $OUT/bk8-$P-2.txt 2>&1; echo "bk8 $P rc=$?"
tail -3 $OUT/bk8-$P-2.txt
done
