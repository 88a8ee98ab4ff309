#!/usr/bin/env bash
# Call 4 (2026-11-28d): the rest of issue 28's op rows in one call, right after call 3's:
# fp32 matmul at 1024³, 3001³ and 4096³, the fp16 NHWC convolutions at ResNet-50's
# distinct layers (cuDNN beside on CUDA) and Winograd at seed 003's shapes, each swept on
# CUDA and on Vulkan (a sample of each target's own space, the rule beside), no records.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
sweep() { # op target limit shapes sample name
  timeout $3 .dev/bin/weft sweep --op $1 --target $2 --shapes "$4" --sample $5 --budget-ms 5 \
    --json $OUT/$6-$2.json > $OUT/$6-$2.txt 2>&1
  echo "$6 $2 rc=$? at $(( $(date +%s) - start )) s"; grep -E "fraction" $OUT/$6-$2.txt | head -3
}
F="m=1024,n=1024,k=1024;m=3001,n=3001,k=3001;m=4096,n=4096,k=4096"
W="n=1,c=64,h=224,w=224,k=64,r=3,s=3,stride=1,pad=1;n=1,c=128,h=122,w=122,k=128,r=3,s=3,stride=1,pad=1"
W="$W;n=1,c=128,h=128,w=128,k=128,r=3,s=3,stride=1,pad=1;n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1"
W="$W;n=1,c=64,h=64,w=64,k=32,r=3,s=3,stride=1,pad=1;n=1,c=64,h=112,w=112,k=128,r=3,s=3,stride=1,pad=1"
for t in cuda vulkan; do sweep matmul $t $([ $t = cuda ] && echo 60 || echo 100) "$F" 24 fp32; done
for t in cuda vulkan; do sweep winograd-conv2d $t $([ $t = cuda ] && echo 50 || echo 70) "$W" 24 winograd; done
for t in cuda vulkan; do sweep conv2d-f16 $t $([ $t = cuda ] && echo 110 || echo 170) resnet50 24 conv; done
