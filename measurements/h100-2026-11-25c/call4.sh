#!/usr/bin/env bash
# Issue 26 item 2: the rule (cost model) against tuning over `mixed` part 2/2, over the
# cubes 1984..2112 (rule, fixed, cuBLAS), and the fp16 rule over `mixed` part 1/2.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
C2048=wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0
timeout 200 $W sweep --shapes mixed --part 2/2 --target cuda --sample 64 --fixed "default;tuned at 2048³:$C2048" --trials --json $OUT/mixed-2.json > $OUT/mixed-2.txt 2>&1; echo "mixed2 rc=$?"
tail -4 $OUT/mixed-2.txt
timeout 190 $W sweep --shapes cubes:1984:2112 --target cuda --sample 0 --fixed "default;tuned at 2048³:$C2048" --json $OUT/cubes.json > $OUT/cubes.txt 2>&1; echo "cubes rc=$?"
tail -3 $OUT/cubes.txt
timeout 180 $W sweep --op matmul-f16 --shapes mixed --part 1/2 --target cuda --sample 48 --trials --budget-ms 10 --json $OUT/f16-1.json > $OUT/f16-1.txt 2>&1; echo "f16 rc=$?"
tail -3 $OUT/f16-1.txt
