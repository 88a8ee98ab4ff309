#!/usr/bin/env bash
# The Vulkan-fitted fp16 rule (new) against the block-count rule it replaces (old, the
# binary of a396359), BERT-base and GPT-2 by the rule (no records) on Vulkan, alternating
# in one call; then where BERT-base's time goes at batch 8, sequence 512 (new).
# Run on the GPU machine from the repository root (carry .gl, .dev).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
for m in bert_base gpt2; do
  for bs in "1 128" "1 512" "8 128" "8 512"; do
    set -- $bs
    for b in weft-old weft; do
      t=$(timeout 120 .dev/bin/$b model bench zoo:$m --dtype f16 --targets vulkan --batch $1 --seq $2 \
          --iters 20 --no-kernels 2>&1 | grep -E "^vulkan" | awk '{print $(NF-5), $(NF-4)}')
      echo "$m b$1/$2 $b: $t"
    done
  done
done | tee $OUT/models-vk.txt
echo "at $(( $(date +%s) - start )) s"
timeout 200 .dev/bin/weft model bench zoo:bert_base --dtype f16 --targets vulkan --batch 8 --seq 512 \
  --iters 10 > $OUT/bert-b8-512-vk-kernels.txt 2>&1
echo "kernels rc=$? at $(( $(date +%s) - start )) s"
