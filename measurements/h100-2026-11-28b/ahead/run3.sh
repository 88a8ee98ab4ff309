#!/usr/bin/env bash
# Call 3 (2026-11-28b): the fp16 products on Vulkan with their register-staged loads two k
# steps ahead (`pf` = 2: two sets of staging registers, the k loop unrolled by two).
# `weft-base` = main da0a681, `weft` = that + `pf` (in the WGSL space, and the rule's picks
# on element-wise targets take it). Why: GPT-2's Vulkan products run one block a
# multiprocessor (96 blocks), and with one step of prefetch each k step waits on its
# global loads (~1 us a step of 64 at 128x3072x768). Predicted: the products 15-25%
# faster, GPT-2 b1/128 on Vulkan 820 -> ~740 us (0.5x CUDA is 766).
# (1) models on Vulkan, old and new alternating; (2) the products' space with and without
# pf at the transformer shapes, every config timed and checked; (3) PyTorch check.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
start=$(date +%s)
el() { echo "$1 at $(( $(date +%s) - start )) s"; }
{
for b in base new base new; do
  bin=$W; [ $b = base ] && bin=.dev/bin/weft-base
  for m in gpt2 bert_base; do
    echo "== $b $m"
    timeout 60 $bin model bench zoo:$m --dtype f16 --targets vulkan --no-kernels --iters 20 2>&1 | grep -E "^vulkan"
  done
done
} > $OUT/models-ab.txt 2>&1; el "models"; cat $OUT/models-ab.txt
S="m=128,n=2304,k=768;m=128,n=768,k=768;m=128,n=3072,k=768;m=128,n=768,k=3072;m=1024,n=2304,k=768;m=1024,n=3072,k=768;m=1024,n=768,k=3072;m=1024,n=1024,k=1024;m=4096,n=4096,k=4096"
timeout 300 $W sweep --op matmul-f16 --target vulkan --shapes "$S" --sample 1000 --trials --budget-ms 10 \
  --json $OUT/f16-vk.json > $OUT/f16-vk.txt 2>&1; el "sweep rc=$?"; grep -vE "^weft:" $OUT/f16-vk.txt | tail -11
WEFT=$W TARGETS=vulkan DTYPES=f16 MODELS=gpt2 SHAPES="1x128" timeout 100 bash scripts/torch_check.sh > $OUT/torch-check.txt 2>&1
el "torch rc=$?"; tail -3 $OUT/torch-check.txt
{
for b in new base; do
  bin=$W; [ $b = base ] && bin=.dev/bin/weft-base
  for m in gpt2@8 bert_base@8; do
    echo "== $b $m"
    timeout 60 $bin model bench zoo:${m%@*} --batch ${m#*@} --dtype f16 --targets vulkan --no-kernels --iters 20 2>&1 | grep -E "^vulkan"
  done
done
} > $OUT/models-b8.txt 2>&1; el "b8"; cat $OUT/models-b8.txt
