#!/usr/bin/env bash
# Call 9 (2026-11-28d): Winograd at seed 003's shapes on CUDA and Vulkan in one call (call
# 4's ran past its limits), 8 sampled configs a shape plus the rule, no records.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
rm -rf .dev/bin; tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
W="n=1,c=64,h=224,w=224,k=64,r=3,s=3,stride=1,pad=1;n=1,c=128,h=122,w=122,k=128,r=3,s=3,stride=1,pad=1"
W="$W;n=1,c=128,h=128,w=128,k=128,r=3,s=3,stride=1,pad=1;n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1"
W="$W;n=1,c=64,h=64,w=64,k=32,r=3,s=3,stride=1,pad=1;n=1,c=64,h=112,w=112,k=128,r=3,s=3,stride=1,pad=1"
for t in cuda vulkan; do
  timeout $([ $t = cuda ] && echo 70 || echo 110) .dev/bin/weft sweep --op winograd-conv2d --target $t \
    --shapes "$W" --sample 8 --budget-ms 5 --json $OUT/winograd-$t.json > $OUT/winograd-$t.txt 2>&1
  echo "winograd $t rc=$? at $(( $(date +%s) - start )) s"; grep -E "fraction" $OUT/winograd-$t.txt | head -2
done
