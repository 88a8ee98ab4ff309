#!/usr/bin/env bash
# 2026-11-27d, call 7: issue 28's fp32 rows with each target's whole space tuned (the
# 24-config sample of call 3 missed a 128x64 tile that runs 1024³ at 0.80x of CUDA on
# Vulkan), and Winograd at seed 003's shapes with 64 configs a shape, CUDA and Vulkan.
# Caution, found after the call: this binary was linked with a stale weft-ir (a build of
# an older checkout in another worktree shared the target directory), without the
# modular analysis of `min`: a clamped column index of B then loads scalar where the
# current code loads vec4. The fp32 shapes here never clamp a vector index (1024 and
# 4096 divide every tile, 3001 is scalar anyway); Winograd's products (n = 784, ...) do,
# so `winograd64-*` understate the current code and are not on the page (run3's are).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
S="m=1024,n=1024,k=1024;m=3001,n=3001,k=3001;m=4096,n=4096,k=4096"
for t in cuda vulkan; do
  timeout 170 .dev/bin/weft sweep --op matmul --target $t --shapes "$S" --sample 200 --budget-ms 5 \
    --json $OUT/fp32-full-$t.json > $OUT/fp32-full-$t.txt 2>&1
  echo "fp32 $t rc=$? at $(( $(date +%s) - start )) s"; grep -E "^m=" $OUT/fp32-full-$t.txt
done
S="n=1,c=64,h=224,w=224,k=64;n=1,c=128,h=122,w=122,k=128;n=1,c=128,h=128,w=128,k=128"
S="$S;n=1,c=64,h=56,w=56,k=64;n=1,c=64,h=64,w=64,k=32;n=1,c=64,h=112,w=112,k=128"
S=$(echo "$S" | sed 's/;/,r=3,s=3,stride=1,pad=1;/g'),r=3,s=3,stride=1,pad=1
for t in cuda vulkan; do
  timeout 150 .dev/bin/weft sweep --op winograd-conv2d --target $t --shapes "$S" --sample 64 --budget-ms 5 \
    --json $OUT/winograd64-$t.json > $OUT/winograd64-$t.txt 2>&1
  echo "winograd $t rc=$? at $(( $(date +%s) - start )) s"; grep -E "^n=" $OUT/winograd64-$t.txt
done
