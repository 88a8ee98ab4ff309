#!/usr/bin/env bash
# Issue 26 item 3: the final rule over consecutive cubes 1984..2112 beside fixed configs and cuBLAS.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
C2048=wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0
timeout 290 $W sweep --shapes cubes:1984:2112 --target cuda --sample 0 --fixed "default;tuned at 2048³:$C2048" --json $OUT/cubes.json > $OUT/cubes.txt 2>&1; echo "cubes rc=$?"
tail -4 $OUT/cubes.txt
