#!/usr/bin/env bash
# 2026-11-27e, call 3: PDL without the early trigger. Call 2's kernels triggered their
# dependents at their start (griddepcontrol.launch_dependents): transformers and
# MobileNet gained 7-9%, but ResNet-50 fp32 and fp16 at batch 8 lost 24-30%. This
# binary's kernels only wait (dependents launch when the blocks exit). Off/on
# alternating with it; the early-trigger binary (weft-early) once beside.
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
S=n=1,c=1024,h=14,w=14,k=512,r=1,s=1,stride=1,pad=0
T=mma=16,wm=2,wn=2,fm=4,fn=2,bk=32,g=8,vec=8,cp=1,st=4,fb=1,cc=0,wg=0
{
for rep in 1 2; do for c in "$T,sk=8" "$T,sk=4" rule; do for v in off exit; do
  cfg=(); [ "$c" != rule ] && cfg=(--config "$c")
  p=1; [ $v = off ] && p=0
  echo "$v $c: $(WEFT_PDL=$p timeout 30 .dev/bin/weft run --op conv2d-f16 --shape $S "${cfg[@]}" --target cuda --iters 400 2>&1 | grep -E '^median' | tr '\n' ' ')"
done; done; done
} > $OUT/conv-pdl2.txt 2>&1; cat $OUT/conv-pdl2.txt
{
for m in "zoo:resnet50" "zoo:resnet50 --dtype f16 --batch 8" "zoo:resnet50 --dtype f16" "zoo:bert_base --dtype f16" "zoo:gpt2 --dtype f16" "zoo:mobilenet_v2 --dtype f16" "zoo:inception_v3 --dtype f16"; do
  for v in off exit off exit early; do
    W=.dev/bin/weft; p=1; [ $v = off ] && p=0; [ $v = early ] && W=.dev/bin/weft-early
    echo "$m $v: $(WEFT_PDL=$p timeout 60 $W model run $m --target cuda 2>&1 | grep -E '^(median|error)' | head -2 | tr '\n' ' ')"
  done
done
} > $OUT/models-pdl2.txt 2>&1; cat $OUT/models-pdl2.txt
echo "done at $(( $(date +%s) - start )) s"
