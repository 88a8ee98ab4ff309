#!/usr/bin/env bash
# Call 2 (2026-11-28b): the aligned copies again, now that a copy thread takes four
# elements (call 1's ncu: one element a thread ran each 16.6 MB copy at 26% of the
# bandwidth, 13.6 us) and rows are padded to multiples of 8 (32-byte aligned). `weft-base`
# = main c5faed5 (no copies in the rule), `weft` = that + the wide injective rule + the
# rule taking copies where `align::pays` says so (CUDA). Predicted: 2039^3 409.7 -> ~388 us
# (copies ~10 us, the product over 2040-wide rows ~376), 0.91x cuBLAS.
# (1) A/B at the cubes 2030-2050 and issue 26's misses; (2) ncu on the new copies;
# (3) issue 26's input-size figure (cubes 1984-2112 by the rule, cuBLAS beside);
# (4) the 60 `mixed` shapes by the rule.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
start=$(date +%s)
el() { echo "$1 at $(( $(date +%s) - start )) s"; }
M="m=2039,n=2039,k=2039;m=1021,n=1021,k=1021;m=999,n=1001,k=997;m=333,n=555,k=777;m=4095,n=4097,k=63;m=3001,n=3001,k=3001;m=128,n=50257,k=768;m=1531,n=769,k=383"
for b in base new; do
  bin=$W; [ $b = base ] && bin=.dev/bin/weft-base
  timeout 50 $bin sweep --op matmul --target cuda --shapes cubes:2030:2050 --sample 0 --budget-ms 10 --json $OUT/ab-cubes-$b.json > /tmp/ab-cubes-$b.txt 2>&1
  timeout 40 $bin sweep --op matmul --target cuda --shapes "$M" --sample 0 --budget-ms 10 --json $OUT/ab-misses-$b.json > /tmp/ab-misses-$b.txt 2>&1
  el "$b"
done
paste <(grep -E "^m=" /tmp/ab-cubes-base.txt | cut -c1-40) <(grep -E "^m=" /tmp/ab-cubes-new.txt | cut -c25-80) > $OUT/ab.txt
paste <(grep -E "^m=" /tmp/ab-misses-base.txt | cut -c1-40) <(grep -E "^m=" /tmp/ab-misses-new.txt | cut -c25-80) >> $OUT/ab.txt
cat $OUT/ab.txt
timeout 40 ncu --clock-control none --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,launch__grid_size \
  --csv -c 3 $W run --op matmul --shape m=2039,n=2039,k=2039 --target cuda --iters 1 > $OUT/ncu-copies.txt 2>&1
grep -E "gpu__time|dram__throughput" $OUT/ncu-copies.txt | cut -d, -f5,13,15
timeout 250 $W sweep --op matmul --target cuda --shapes cubes:1984:2112 --sample 0 --budget-ms 10 \
  --json $OUT/cubes.json > $OUT/cubes.txt 2>&1; el "cubes rc=$?"; grep -vE "^weft:" $OUT/cubes.txt | tail -3
timeout $(( 570 - $(date +%s) + start )) $W sweep --op matmul --target cuda --shapes mixed --sample 0 --budget-ms 10 \
  --json $OUT/mixed.json > $OUT/mixed.txt 2>&1; el "mixed rc=$?"; grep -vE "^weft:" $OUT/mixed.txt | tail -3
cd $OUT && tar czf ab.tgz ab-*.json && rm ab-*.json
