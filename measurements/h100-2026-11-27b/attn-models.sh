#!/usr/bin/env bash
# The attention rule's two passes on Vulkan (new) against one pass (prev: the same code
# with the one-pass rule), BERT-base and GPT-2 by the rule, alternating in one call.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
for m in bert_base gpt2; do
  for bs in "1 512" "8 512" "1 128"; do
    set -- $bs
    for b in weft-prev weft; do
      t=$(timeout 120 .dev/bin/$b model bench zoo:$m --dtype f16 --targets vulkan --batch $1 --seq $2 \
          --iters 20 --no-kernels 2>&1 | grep -E "^vulkan" | awk '{print $(NF-5), $(NF-4)}')
      echo "$m b$1/$2 $b: $t"
    done
  done
done | tee $OUT/attn-models.txt
