#!/usr/bin/env bash
# Each config alone in its own process (`weft run`, warm-up and settling first): which
# of the tuner's readings is right, the fast first one or the slow later ones?
export WEFT_RECORDS=/tmp/none.json
for s in m=64,n=64,k=64 m=784,n=512,k=128; do
  for c in mma=16,wm=2,wn=2,fm=2,fn=2,bk=32,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0 \
           mma=16,wm=2,wn=2,fm=2,fn=2,bk=64,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0 \
           mma=16,wm=2,wn=2,fm=1,fn=2,bk=64,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0 \
           mma=16,wm=4,wn=1,fm=1,fn=4,bk=64,g=8,vec=8,cp=0,st=4,fb=1,cc=0,wg=1; do
    for b in weft-nosettle weft-warm; do
      t=$(.dev/bin/$b run --op matmul-f16 --shape $s --target cuda --config $c --iters 200 2>&1 | grep -E "median" | tr -s ' ')
      echo "$s $c $b: $t"
    done
  done
done | tee $OUT/alone.txt
