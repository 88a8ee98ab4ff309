#!/usr/bin/env bash
# Call 2 (2026-11-28, main 67c5b85-ish: the rule with warps sharing rows): (1) the
# transformers f16 by the rule on Vulkan and CUDA, the previous rule (`weft-base`, main
# + the space only) and the new alternating; each `model run` checks against the float64
# reference and its replay. (2) The attention space on Vulkan again with the new rule,
# and at GPT-2's batch 8 × 512 (96 heads). (3) Per kernel on Vulkan, BERT-base b1/128.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
{
for m in "bert_base" "gpt2" "gpt2 --seq 512" "bert_base --batch 8" "gpt2 --batch 8 --seq 512"; do
  for t in vulkan cuda; do for b in base new base new; do
    [ $t = cuda ] && [ $b = base ] && continue
    bin=.dev/bin/weft; [ $b = base ] && bin=.dev/bin/weft-base
    echo "$m f16 $t $b: $(timeout 60 $bin model run zoo:$m --dtype f16 --target $t 2>&1 | grep -E '^(median|error|replayed)' | tr -s ' ' | tr '\n' ' ')"
  done; done
done
} > $OUT/models.txt 2>&1; cut -c1-220 $OUT/models.txt
echo "models at $(( $(date +%s) - start )) s"
S="bh=12,s=128,t=128,d=64,causal=0;bh=12,s=128,t=128,d=64,causal=1;bh=96,s=128,t=128,d=64,causal=1;bh=12,s=512,t=512,d=64,causal=1;bh=96,s=512,t=512,d=64,causal=0;bh=96,s=512,t=512,d=64,causal=1"
timeout 200 .dev/bin/weft sweep --op attention-f16 --target vulkan --shapes "$S" --sample 400 --trials --budget-ms 10 \
  --json $OUT/attn-vk-rule.json > $OUT/attn-vk-rule.txt 2>&1; echo "sweep rc=$? at $(( $(date +%s) - start )) s"
grep -vE "^weft:" $OUT/attn-vk-rule.txt | tail -8
timeout 100 .dev/bin/weft model bench zoo:bert_base --dtype f16 --targets cuda,vulkan > $OUT/bench-bert.txt 2>&1
echo "bench rc=$? at $(( $(date +%s) - start )) s"; grep -A3 "^target" $OUT/bench-bert.txt
