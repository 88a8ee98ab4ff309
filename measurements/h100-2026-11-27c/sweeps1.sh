#!/usr/bin/env bash
# Issue 28's figure (its convolution and fp32 rows) and issue 26's fp16 convolution
# against cuDNN, in one call at d640bf4: the fp16 NHWC implicit GEMM at ResNet-50's
# distinct convolutions (`--shapes resnet50`, cuDNN timed beside on CUDA) and the fp32
# matmul at 1024³, 3001³ and 4096³, each swept on CUDA and on Vulkan (configs of each
# target's own space, the rule beside), no tuning records.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
start=$(date +%s)
for t in cuda vulkan; do
  lim=$([ $t = cuda ] && echo 140 || echo 230)
  timeout $lim .dev/bin/weft sweep --op conv2d-f16 --target $t --shapes resnet50 --sample 32 --budget-ms 5 \
    --json $OUT/conv-$t.json > $OUT/conv-$t.txt 2>&1
  echo "conv $t rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/conv-$t.txt | tail -4
done
S="m=1024,n=1024,k=1024;m=3001,n=3001,k=3001;m=4096,n=4096,k=4096"
for t in cuda vulkan; do
  lim=$([ $t = cuda ] && echo 70 || echo 120)
  timeout $lim .dev/bin/weft sweep --op matmul --target $t --shapes "$S" --sample 24 --budget-ms 5 \
    --json $OUT/fp32-$t.json > $OUT/fp32-$t.txt 2>&1
  echo "fp32 $t rc=$? at $(( $(date +%s) - start )) s"; grep -E "^m=" $OUT/fp32-$t.txt
done
