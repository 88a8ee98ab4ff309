#!/usr/bin/env bash
# Issue 26 item 4: the wgmma + TMA fp16 matmul on the H100: right at odd and large
# shapes, timed beside the mma.sync rule and cuBLAS (weft sweep), racecheck and memcheck.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
cfg(){ echo "mma=16,wm=$1,wn=1,fm=$2,fn=$3,bk=64,g=8,vec=8,cp=0,st=$4,fb=1,cc=0,wg=$5"; }
C1=$(cfg 8 1 16 4 2); C2=$(cfg 8 2 8 4 2); C3=$(cfg 4 2 8 4 1); C4=$(cfg 8 1 8 4 2); C5=$(cfg 8 1 16 3 2); C6=$(cfg 4 1 8 4 1)
for shape in m=1000,n=1000,k=1000 m=4096,n=4096,k=4096; do
  for c in $C1 $C2 $C3 $C4 $C5 $C6; do
    echo "== $shape $c"
    timeout 60 $W run --op matmul-f16 --shape $shape --target cuda --config $c 2>&1 | grep -E "^(median|error|config|weft)|TFLOP|right|wrong" | head -5
  done
  echo "== $shape rule (sm_90a)"; timeout 60 $W run --op matmul-f16 --shape $shape --target cuda 2>&1 | grep -E "^(median|error|config|rule|weft)" | head -5
  echo "== $shape rule (sm_90, mma.sync)"; timeout 60 $W run --op matmul-f16 --shape $shape --target "cuda -arch=sm_90" 2>&1 | grep -E "^(median|error|config|rule|weft)" | head -5
done
timeout 200 $W sweep --op matmul-f16 --shapes "m=4096,n=4096,k=4096;m=2048,n=2048,k=2048;m=1000,n=1000,k=1000" --target cuda --sample 0 --fixed "wg2x1x256:$C1;wg2x2x128:$C2;wg1x2x128:$C3;wg2x1x128:$C4;wg2x1x256st3:$C5" --json $OUT/hopper-sweep.json > $OUT/hopper-sweep.txt 2>&1; echo "sweep rc=$?"
cat $OUT/hopper-sweep.txt | tail -30
echo "== racecheck"; timeout 120 compute-sanitizer --tool racecheck $W run --op matmul-f16 --shape m=200,n=264,k=328 --target cuda --config $C4 --iters 1 2>&1 | tail -4
echo "== memcheck"; timeout 120 compute-sanitizer --tool memcheck $W run --op matmul-f16 --shape m=200,n=264,k=328 --target cuda --config $C4 --iters 1 2>&1 | tail -4
