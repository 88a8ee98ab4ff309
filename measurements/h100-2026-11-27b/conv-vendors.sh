#!/usr/bin/env bash
# Issue 28's figure, its convolution rows (and issue 26's fp16 conv against cuDNN): the
# fp16 NHWC implicit GEMM at ResNet-50's distinct convolutions (`--shapes resnet50`),
# cuDNN (fastest algorithm, fp16 NHWC) timed beside each on CUDA,
# swept on CUDA and on Vulkan in one call, 32 configs of each target's space at each
# shape, the rule beside. Prepared on 2026-11-27 and not run: the session's device time
# was spent.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
for t in cuda vulkan; do
  timeout 280 .dev/bin/weft sweep --op conv2d-f16 --target $t --shapes resnet50 --sample 32 --budget-ms 5 \
    --json $OUT/conv-$t.json > $OUT/conv-$t.txt 2>&1
  echo "$t rc=$? at $(( $(date +%s) - start )) s"; tail -3 $OUT/conv-$t.txt
done
