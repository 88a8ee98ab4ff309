#!/usr/bin/env bash
# Issue 28's figure, its Winograd rows: winograd-conv2d (F(2×2, 3×3)) at seed 003's six
# shapes swept on CUDA (cuDNN beside) and on Vulkan, then the transformer figure after
# two-pass attention (fig.sh of h100-2026-11-27b: PyTorch eager, one CUDA graph and
# torch.compile, and weft on CUDA and Vulkan by the rule, in one `weft report` call), at
# d640bf4, no tuning records.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
S="n=1,c=64,h=224,w=224,k=64;n=1,c=128,h=122,w=122,k=128;n=1,c=128,h=128,w=128,k=128"
S="$S;n=1,c=64,h=56,w=56,k=64;n=1,c=64,h=64,w=64,k=32;n=1,c=64,h=112,w=112,k=128"
S=$(echo "$S" | sed 's/;/,r=3,s=3,stride=1,pad=1;/g'),r=3,s=3,stride=1,pad=1
start=$(date +%s)
for t in cuda vulkan; do
  lim=$([ $t = cuda ] && echo 80 || echo 120)
  timeout $lim .dev/bin/weft sweep --op winograd-conv2d --target $t --shapes "$S" --sample 32 --budget-ms 5 \
    --json $OUT/winograd-$t.json > $OUT/winograd-$t.txt 2>&1
  echo "winograd $t rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/winograd-$t.txt | tail -9
done
bash measurements/h100-2026-11-27b/fig.sh > /dev/null 2>&1
tail -3 $OUT/fig.txt
echo "all done at $(( $(date +%s) - start )) s"
