#!/usr/bin/env bash
# 2026-11-27e, call 2: programmatic dependent launch (PDL). One binary; WEFT_PDL=0 launches
# every kernel the ordinary way (the kernels' griddepcontrol instructions then return at
# once), WEFT_PDL=1 (the default) with the programmatic-serialization attribute.
# (1) correctness with PDL on: workloads on CUDA+Vulkan vs float64, hand-built kernels,
# models vs ONNX Runtime; (2) issue 26's 1x1 1024->512 @14² conv, rule and tuned
# configs, off/on alternating, then its sweep row with cuDNN beside (PDL on);
# (3) whole models on CUDA off/on alternating.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
start=$(date +%s)
{
for t in .dev/checks/handmade-* .dev/checks/workloads-* .dev/checks/models-*; do
  echo "== $t"
  WEFT_REQUIRE=cuda,vulkan timeout 170 "$t" --test-threads=1 2>&1 | tail -n 6
  echo "exit ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s"
done
} > $OUT/checks-pdl.txt 2>&1
grep -E "^(==|exit|test result)" $OUT/checks-pdl.txt
S=n=1,c=1024,h=14,w=14,k=512,r=1,s=1,stride=1,pad=0
T=mma=16,wm=2,wn=2,fm=4,fn=2,bk=32,g=8,vec=8,cp=1,st=4,fb=1,cc=0,wg=0
{
for rep in 1 2; do for c in "$T,sk=8" "$T,sk=4" rule; do for p in 0 1; do
  cfg=(); [ "$c" != rule ] && cfg=(--config "$c")
  echo "pdl=$p $c: $(WEFT_PDL=$p timeout 30 $W run --op conv2d-f16 --shape $S "${cfg[@]}" --target cuda --iters 400 2>&1 | grep -E '^median' | tr '\n' ' ')"
done; done; done
} > $OUT/conv-pdl.txt 2>&1; cat $OUT/conv-pdl.txt
WEFT_PDL=1 timeout 150 $W sweep --op conv2d-f16 --target cuda --shapes resnet50 --sample 24 --budget-ms 5 \
  --json $OUT/conv-pdl-sweep.json > $OUT/conv-pdl-sweep.txt 2>&1; echo "sweep rc=$? at $(( $(date +%s) - start )) s"
grep -vE "^weft:" $OUT/conv-pdl-sweep.txt | tail -4
{
for m in "zoo:resnet50 --dtype f16" "zoo:resnet50" "zoo:bert_base --dtype f16" "zoo:gpt2 --dtype f16" "zoo:mobilenet_v2 --dtype f16" "zoo:inception_v3 --dtype f16" "zoo:resnet50 --dtype f16 --batch 8"; do
  for p in 0 1 0 1; do
    echo "$m pdl=$p: $(WEFT_PDL=$p timeout 60 $W model run $m --target cuda 2>&1 | grep -E '^(median|error)|vs ' | tr '\n' ' ')"
  done
done
} > $OUT/models-pdl.txt 2>&1; cat $OUT/models-pdl.txt
echo "done at $(( $(date +%s) - start )) s"
