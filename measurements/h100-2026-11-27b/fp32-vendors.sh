#!/usr/bin/env bash
# Issue 28's figure, its fp32 rows: the fp32 matmul at 1024³, 3001³ and 4096³ swept on
# CUDA and on Vulkan in one call (24 configs of each target's space at each shape, the
# rule beside), for `weft report`'s CUDA/Vulkan section. Prepared on 2026-11-27 and not
# run: the session's device time was spent.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
S="m=1024,n=1024,k=1024;m=3001,n=3001,k=3001;m=4096,n=4096,k=4096"
start=$(date +%s)
for t in cuda vulkan; do
  timeout 75 .dev/bin/weft sweep --op matmul --target $t --shapes "$S" --sample 24 --budget-ms 5 \
    --json $OUT/fp32-$t.json > $OUT/fp32-$t.txt 2>&1
  echo "$t rc=$? at $(( $(date +%s) - start )) s"; grep -E "^m=" $OUT/fp32-$t.txt
done
