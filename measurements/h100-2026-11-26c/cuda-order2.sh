#!/usr/bin/env bash
# Why the config a tuning times first reads fast on CUDA. The space's first config
# (64x64 tile, k step 32) is timed last here (`--only bk=64` leaves it out of the sample;
# `--fixed` adds it after the others), at four shapes, by three builds, twice each:
#   nosettle: main before this stop (only the first config of a tuning warms up, 25 ms);
#   settle:   CUDA timings after an idle spell settle the clocks first, as wgpu's do;
#   warm:     settle, and every config of a tuning warms up, not only the first.
export WEFT_RECORDS=/tmp/none.json
F="first:mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0"
S="m=64,n=64,k=64;m=784,n=512,k=128;m=128,n=768,k=768;m=1024,n=1024,k=1024"
nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu,power.draw --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
smi=$!
for rep in 1 2; do for b in nosettle settle warm; do
  W=.dev/bin/weft-$b; [ $b = settle ] && W=.dev/bin/weft
  timeout 120 $W sweep --op matmul-f16 --target cuda --shapes "$S" --sample 16 --only bk=64 --trials --fixed "$F" \
    --json $OUT/order2-$b-$rep.json > $OUT/order2-$b-$rep.txt 2>&1; echo "$b $rep rc=$? at $(date +%T.%N)"
  head -5 $OUT/order2-$b-$rep.txt | tail -4
done; done
kill $smi
