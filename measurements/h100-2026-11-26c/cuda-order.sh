#!/usr/bin/env bash
# Is a CUDA timing that follows a compile slower than the first of a process? The same
# config timed three times at 64^3 (as the rule's pick, then as two fixed configs, each
# after a compile), with 12 more configs of the space, at three small shapes; nvidia-smi
# samples the SM clock every 50 ms. Two builds: `nosettle` (CUDA timings warm up for
# 25 ms only) and `settle` (after an idle spell they first settle the clocks, as wgpu's).
export WEFT_RECORDS=/tmp/none.json
C="mma=16,wm=2,wn=2,fm=1,fn=2,bk=64,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0"
S="m=64,n=64,k=64;m=784,n=512,k=128;m=128,n=768,k=768"
for b in nosettle settle; do
  W=.dev/bin/weft-$b; [ $b = settle ] && W=.dev/bin/weft
  nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu --format=csv -lms 50 > $OUT/smi-$b.csv 2>&1 &
  smi=$!
  start=$(date +%s.%N)
  timeout 200 $W sweep --op matmul-f16 --target cuda --shapes "$S" --sample 12 --trials --fixed "again:$C;again2:$C" \
    --json $OUT/order-$b.json > $OUT/order-$b.txt 2>&1; echo "$b rc=$? started $start"
  kill $smi
  cat $OUT/order-$b.txt | tail -5
done
