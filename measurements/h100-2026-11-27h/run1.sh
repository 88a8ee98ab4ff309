#!/usr/bin/env bash
# 2026-11-27h, call 1: wgmma over the implicit GEMM's views (issue 26 item 4's conv half):
# the threads gather the im2col and filter tiles with cp.async into the swizzled stages,
# each barrier fences them against the async proxy. (1) Right on the GPU: `weft run`
# against the float64 reference at ResNet-50 shapes and an odd one, compute-sanitizer
# (racecheck, memcheck, synccheck) on a small one. (2) Registers and spills (ptxas -v).
# (3) Every wgmma config over views (14 per warpgroup count) at ResNet-50's 8 distinct
# convolutions at batch 8 and its 23 at batch 1, beside cuDNN, every trial kept.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
W=.dev/bin/weft
C1="mma=16,wm=4,wn=1,fm=1,fn=8,bk=64,g=8,vec=8,cp=0,st=4,fb=1,cc=0,wg=1"
C2="mma=16,wm=8,wn=1,fm=1,fn=8,bk=64,g=8,vec=8,cp=0,st=4,fb=1,cc=0,wg=2"
C3="mma=16,wm=4,wn=1,fm=2,fn=8,bk=64,g=8,vec=8,cp=0,st=3,fb=1,cc=0,wg=1"
{
for c in $C1 $C2 $C3; do
  for s in "n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1" "n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1" "n=3,c=40,h=17,w=13,k=72,r=3,s=3,stride=2,pad=1"; do
    echo "$c $s: $(timeout 30 $W run --op conv2d-f16 --shape $s --config $c --target cuda 2>&1 | grep -E '^(median|error)' | tr -s ' ' | tr '\n' ' ')"
  done
  echo "bias-relu $c: $(timeout 30 $W run --op conv2d-f16-bias-relu --shape n=8,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1 --config $c --target cuda 2>&1 | grep -E '^(median|error)' | tr -s ' ' | tr '\n' ' ')"
done
for tool in racecheck memcheck synccheck; do
  echo "== $tool"
  timeout 120 compute-sanitizer --tool $tool $W run --op conv2d-f16 --shape n=1,c=64,h=9,w=9,k=72,r=3,s=3,stride=1,pad=1 --config $C2 --target cuda 2>&1 | grep -E "ERROR SUMMARY|error|Error" | head -5
done
} > $OUT/checks.txt 2>&1; cat $OUT/checks.txt | cut -c1-240
echo "checks at $(( $(date +%s) - start )) s"
for c in $C1 $C2 $C3; do
  $W emit --op conv2d-f16 --shape n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1 --config $c --target "cuda -arch=sm_90a" > /tmp/k.cu 2>/dev/null
  echo "$c: $(nvcc -arch=sm_90a -cubin -o /tmp/k.cubin -Xptxas -v /tmp/k.cu 2>&1 | grep -E 'registers|spill' | tr -s ' ' | tr '\n' ' ')"
done > $OUT/ptxas.txt 2>&1; cat $OUT/ptxas.txt | cut -c1-300
B8="n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1;n=8,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=8,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1;n=8,c=256,h=14,w=14,k=1024,r=1,s=1,stride=1,pad=0;n=8,c=256,h=56,w=56,k=512,r=1,s=1,stride=2,pad=0;n=8,c=1024,h=14,w=14,k=256,r=1,s=1,stride=1,pad=0;n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1;n=8,c=256,h=56,w=56,k=64,r=1,s=1,stride=1,pad=0"
for g in 1 2; do
  timeout 150 $W sweep --op conv2d-f16 --target cuda --shapes "$B8" --only wg=$g --sample 14 --budget-ms 10 --trials \
    --json $OUT/conv-b8-wg$g.json > $OUT/conv-b8-wg$g.txt 2>&1
  echo "b8 wg=$g rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/conv-b8-wg$g.txt | tail -12 | cut -c1-200
done
for g in 1 2; do
  timeout 170 $W sweep --op conv2d-f16 --target cuda --shapes resnet50 --only wg=$g --sample 14 --budget-ms 10 --trials \
    --json $OUT/conv-b1-wg$g.json > $OUT/conv-b1-wg$g.txt 2>&1
  echo "b1 wg=$g rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/conv-b1-wg$g.txt | tail -4 | cut -c1-200
done
