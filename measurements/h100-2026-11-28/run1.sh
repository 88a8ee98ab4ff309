#!/usr/bin/env bash
# Call 1 (2026-11-28): the attention template's space on Vulkan with warps sharing a
# fragment row (`w` > `bq` / 16: the warps split the score and output columns), at
# BERT's and GPT-2's shapes, every config timed (`--trials`), CUDA's rule beside; the
# per-kernel floor of a Vulkan timing (a 256-float vecadd, a one-block attention).
# Run on the GPU machine from the repository root (carry .gl, .dev).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
S="bh=12,s=128,t=128,d=64,causal=0;bh=12,s=128,t=128,d=64,causal=1;bh=96,s=128,t=128,d=64,causal=0;bh=96,s=128,t=128,d=64,causal=1;bh=12,s=512,t=512,d=64,causal=0;bh=12,s=512,t=512,d=64,causal=1"
start=$(date +%s)
timeout 400 $W sweep --op attention-f16 --target vulkan --shapes "$S" --sample 400 --trials --budget-ms 10 \
  --json $OUT/attn-vk.json > $OUT/attn-vk.txt 2>&1; echo "vk rc=$? at $(( $(date +%s) - start )) s"
timeout 100 $W sweep --op attention-f16 --target cuda --shapes "$S" --sample 0 --budget-ms 10 \
  --json $OUT/attn-cuda.json > $OUT/attn-cuda.txt 2>&1; echo "cuda rc=$? at $(( $(date +%s) - start )) s"
{
for t in vulkan cuda; do
  for s in n=256 n=4194304; do
    echo "== vecadd $s $t"; timeout 60 $W run --op vecadd --shape $s --target $t --iters 200 2>&1 | grep -E "^(config|median)"
  done
  echo "== attention one block $t"
  timeout 60 $W run --op attention-f16 --shape bh=1,s=16,t=16,d=64,causal=0 --target $t --iters 200 2>&1 | grep -E "^(config|median)"
done
} > $OUT/floor.txt 2>&1
echo "at $(( $(date +%s) - start )) s"; cat $OUT/floor.txt
grep -vE "^weft:" $OUT/attn-vk.txt | tail -30
