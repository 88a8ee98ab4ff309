#!/usr/bin/env bash
# Call 3 (2026-11-28d): issue 28's fp16 product rows in one call: the same 19 shapes swept
# on CUDA and on Vulkan (a sample of each target's own space, the rule beside, cuBLAS on
# CUDA), no tuning records, weft of main (the rule with two fragment sets over one k
# sub-step).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
start=$(date +%s)
S="m=128,n=2304,k=768;m=128,n=768,k=768;m=128,n=3072,k=768;m=128,n=768,k=3072"
S="$S;m=512,n=2304,k=768;m=512,n=768,k=768;m=512,n=3072,k=768;m=512,n=768,k=3072"
S="$S;m=1024,n=768,k=768;m=1024,n=3072,k=768;m=1024,n=768,k=3072;m=1024,n=1024,k=1024"
S="$S;m=4096,n=4096,k=4096;m=197,n=768,k=3072;m=1000,n=1000,k=1000;m=8,n=4096,k=4096"
S="$S;m=2048,n=2048,k=2048;m=3136,n=64,k=576;m=256,n=256,k=8192"
for t in cuda vulkan; do
  lim=$([ $t = cuda ] && echo 230 || echo 290)
  timeout $lim .dev/bin/weft sweep --op matmul-f16 --target $t --shapes "$S" --sample 24 --budget-ms 5 \
    --json $OUT/f16-$t.json > $OUT/f16-$t.txt 2>&1
  echo "f16 $t rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/f16-$t.txt | tail -3
done
