#!/usr/bin/env bash
# 2026-11-27d, call 3: issue 28's fp32 rows (1024³, 3001³, 4096³, 24 configs tuned a
# shape on each target) and Winograd at seed 003's six shapes (its 16 products are the
# fp32 template's batched form), CUDA and Vulkan, with the untested loads.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
S="m=1024,n=1024,k=1024;m=3001,n=3001,k=3001;m=4096,n=4096,k=4096"
for t in cuda vulkan; do
  lim=$([ $t = cuda ] && echo 70 || echo 120)
  timeout $lim .dev/bin/weft sweep --op matmul --target $t --shapes "$S" --sample 24 --budget-ms 5 \
    --json $OUT/fp32-$t.json > $OUT/fp32-$t.txt 2>&1
  echo "fp32 $t rc=$? at $(( $(date +%s) - start )) s"; grep -E "^m=" $OUT/fp32-$t.txt
done
S="n=1,c=64,h=224,w=224,k=64;n=1,c=128,h=122,w=122,k=128;n=1,c=128,h=128,w=128,k=128"
S="$S;n=1,c=64,h=56,w=56,k=64;n=1,c=64,h=64,w=64,k=32;n=1,c=64,h=112,w=112,k=128"
S=$(echo "$S" | sed 's/;/,r=3,s=3,stride=1,pad=1;/g'),r=3,s=3,stride=1,pad=1
for t in cuda vulkan; do
  lim=$([ $t = cuda ] && echo 80 || echo 120)
  timeout $lim .dev/bin/weft sweep --op winograd-conv2d --target $t --shapes "$S" --sample 32 --budget-ms 5 \
    --json $OUT/winograd-$t.json > $OUT/winograd-$t.txt 2>&1
  echo "winograd $t rc=$? at $(( $(date +%s) - start )) s"; grep -E "^n=" $OUT/winograd-$t.txt
done
