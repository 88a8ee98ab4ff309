#!/usr/bin/env bash
# Issue 26 item 2: the fp16 matmul's rule against a tuning sample over `mixed` (sm_90a).
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
P=${1:-1/2}
N=$(echo $P | tr / -)
timeout ${2:-200} $W sweep --op matmul-f16 --shapes mixed --part $P --target cuda --sample ${3:-48} --trials --budget-ms 10 --json $OUT/f16-$N.json > $OUT/f16-$N.txt 2>&1; echo "f16 $P rc=$?"
tail -4 $OUT/f16-$N.txt
