#!/usr/bin/env bash
# Issue 26 item 2: the fp16 rule against tuning over `mixed` part 2/2 (part 1/2 is in
# h100-2026-11-25c/f16-1.json), every timed config kept for a tensor-core cost model.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
timeout 400 $W sweep --op matmul-f16 --shapes mixed --part 2/2 --target cuda --sample 48 --trials --budget-ms 10 --json $OUT/f16-2.json > $OUT/f16-2.txt 2>&1; echo "f16 rc=$?"
tail -3 $OUT/f16-2.txt
