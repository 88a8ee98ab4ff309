#!/usr/bin/env bash
# Call 5 (2026-11-28d): the whole Vulkan space of the fp16 convolution (implicit GEMM over
# views, 139 configs) at nine of ResNet-50's distinct layers, every time kept (`--trials`):
# the data for the Vulkan rule over views, which call 4 found at 0.22-0.95x of the best
# sampled config (the block-count rule, always k steps of 16).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
S="n=1,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3;n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1"
S="$S;n=1,c=128,h=56,w=56,k=128,r=3,s=3,stride=2,pad=1;n=1,c=512,h=28,w=28,k=128,r=1,s=1,stride=1,pad=0"
S="$S;n=1,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=1,c=1024,h=14,w=14,k=256,r=1,s=1,stride=1,pad=0"
S="$S;n=1,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1;n=1,c=2048,h=7,w=7,k=512,r=1,s=1,stride=1,pad=0"
S="$S;n=1,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1"
timeout 520 .dev/bin/weft sweep --op conv2d-f16 --target vulkan --shapes "$S" --sample 2000 --trials --budget-ms 4 \
  --json $OUT/conv-vk-all.json > $OUT/conv-vk-all.txt 2>&1
echo "rc=$? at $(( $(date +%s) - start )) s"; grep -E "rule .*tuned|fraction" $OUT/conv-vk-all.txt
