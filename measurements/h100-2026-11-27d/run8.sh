#!/usr/bin/env bash
# 2026-11-27d, call 8: the fp16 template's k loop without the test of k in whole tiles
# (ragged rows of a view keep their loop-invariant test; stored operands clamp): old and
# new binaries alternating, rule picks only, at ResNet-50's 23 convolutions (cuDNN
# beside) and four ragged products, then ResNet-50 in fp16 on CUDA and Vulkan.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
P="m=197,n=768,k=3072;m=1000,n=1000,k=1000;m=127,n=127,k=127;m=3136,n=64,k=576"
for b in old new; do
  W=.dev/bin/weft; [ $b = old ] && W=.dev/bin/weft-old
  timeout 90 $W sweep --op conv2d-f16 --target cuda --shapes resnet50 --sample 0 --budget-ms 5 \
    --json $OUT/conv-$b.json > $OUT/conv-$b.txt 2>&1
  echo "conv $b rc=$? at $(( $(date +%s) - start )) s"; tail -2 $OUT/conv-$b.txt
  timeout 40 $W sweep --op matmul-f16 --target cuda --shapes "$P" --sample 0 --budget-ms 5 \
    > $OUT/f16-$b.txt 2>&1
  echo "f16 $b rc=$? at $(( $(date +%s) - start )) s"; grep -E "^m=" $OUT/f16-$b.txt
done
for t in cuda vulkan; do for b in old new old new; do
  W=.dev/bin/weft; [ $b = old ] && W=.dev/bin/weft-old
  echo "resnet50 f16 $t $b: $(timeout 60 $W model run zoo:resnet50 --dtype f16 --target $t 2>&1 | grep -E '^(median|error)|vs ' | tr '\n' ' ')"
done; done | tee $OUT/resnet-f16.txt
echo "done at $(( $(date +%s) - start )) s"
