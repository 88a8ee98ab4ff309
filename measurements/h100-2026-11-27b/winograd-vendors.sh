#!/usr/bin/env bash
# Issue 28's figure, its Winograd rows: winograd-conv2d (F(2×2, 3×3), four kernels) at
# seed 003's six shapes swept on CUDA (cuDNN beside) and on Vulkan in one call, 32
# configs of each target's space at each shape, the rule beside. Prepared on 2026-11-27
# and not run: the session's device time was spent.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
S="n=1,c=64,h=224,w=224,k=64;n=1,c=128,h=122,w=122,k=128;n=1,c=128,h=128,w=128,k=128"
S="$S;n=1,c=64,h=56,w=56,k=64;n=1,c=64,h=64,w=64,k=32;n=1,c=64,h=112,w=112,k=128"
S=$(echo "$S" | sed 's/;/,r=3,s=3,stride=1,pad=1;/g'),r=3,s=3,stride=1,pad=1
start=$(date +%s)
for t in cuda vulkan; do
  timeout 280 .dev/bin/weft sweep --op winograd-conv2d --target $t --shapes "$S" --sample 32 --budget-ms 5 \
    --json $OUT/winograd-$t.json > $OUT/winograd-$t.txt 2>&1
  echo "$t rc=$? at $(( $(date +%s) - start )) s"; tail -3 $OUT/winograd-$t.txt
done
