#!/usr/bin/env bash
# Call 4 (2026-11-28, main with aligned copies, `al`): (1) the fp32 rule with and without
# the copies in one call — `weft-base` (main before them) and `weft` at six cubes around
# 2039 and issue 26's unaligned misses; (2) issue 26's input-size figure (cubes 1984..2112
# by the rule beside the fixed configs and cuBLAS); (3) the 60 `mixed` shapes tuned.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
C2048="wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0"
S="cubes:2036:2041"
M="m=2039,n=2039,k=2039;m=1021,n=1021,k=1021;m=999,n=1001,k=997;m=333,n=555,k=777;m=4095,n=4097,k=63;m=3001,n=3001,k=3001;m=128,n=50257,k=768;m=1531,n=769,k=383"
start=$(date +%s)
for b in base new; do
  bin=$W; [ $b = base ] && bin=.dev/bin/weft-base
  timeout 60 $bin sweep --op matmul --target cuda --shapes "$S" --sample 0 --budget-ms 10 --json $OUT/ab-cubes-$b.json > $OUT/ab-cubes-$b.txt 2>&1
  timeout 60 $bin sweep --op matmul --target cuda --shapes "$M" --sample 0 --budget-ms 10 --json $OUT/ab-misses-$b.json > $OUT/ab-misses-$b.txt 2>&1
  echo "$b at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/ab-*-$b.txt | grep "rule" | cut -c1-120
done
timeout 240 $W sweep --op matmul --target cuda --shapes cubes:1984:2112 --sample 0 --budget-ms 10 \
  --fixed "default;tuned at 2048³:$C2048" --json $OUT/cubes.json > $OUT/cubes.txt 2>&1
echo "cubes rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/cubes.txt | tail -4
timeout $(( 540 - $(date +%s) + start )) $W sweep --op matmul --target cuda --shapes mixed --sample 48 --budget-ms 10 \
  --fixed "default;tuned at 2048³:$C2048" --json $OUT/fp32-mixed.json > $OUT/fp32-mixed.txt 2>&1
echo "mixed rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/fp32-mixed.txt | tail -5
cd $OUT && tar czf ab.tgz ab-*.json ab-*.txt && rm ab-*
