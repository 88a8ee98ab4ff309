#!/usr/bin/env bash
# Issue 26: the 60-shape sweep (both halves, the rule preferring k steps of 16 and 4x8
# lanes) and the input-size sweep m = n = k = 1984..2112, with the config tuned at 2048^3
# (first call) and the old fixed default as fixed configs.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
C="tuned at 2048³:wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0"
for p in 1 2; do
  timeout 200 $W sweep --shapes mixed --part $p/2 --target cuda --sample 64 --fixed "default;$C" --json $OUT/mixed-$p.json > $OUT/mixed-$p.txt 2>&1; echo "mixed$p rc=$?"
  tail -4 $OUT/mixed-$p.txt
done
timeout 330 $W sweep --shapes cubes:1984:2112 --target cuda --sample 0 --fixed "default;$C" --json $OUT/cubes.json > $OUT/cubes.txt 2>&1; echo "cubes rc=$?"
tail -4 $OUT/cubes.txt
