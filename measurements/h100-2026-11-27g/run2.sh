#!/usr/bin/env bash
# 2026-11-27g, call 2: attention's shuffles only in the one-pass form (call 1: two passes
# 43.0 -> 44.3 us on Vulkan). Per kernel, old (main 028b1b3) and new: BERT-base f16 at
# 128 tokens (one pass on Vulkan, registers on CUDA) and GPT-2 f16 at batch 8 (96 heads
# of 512: two passes on Vulkan, now without shuffles); BERT-base fp32 on CUDA (CUDA-core
# attention, 4 threads a row, shuffles) whole model.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
for m in "bert_base" "gpt2 --batch 8"; do
  f=$(echo "$m" | tr -d ' -')
  for b in old new; do
    bin=.dev/bin/weft; [ $b = old ] && bin=.dev/bin/weft-old
    timeout 100 $bin model bench zoo:$m --dtype f16 --targets cuda,vulkan > $OUT/bench-$f-$b.txt 2>&1
    echo "$m $b rc=$? at $(( $(date +%s) - start )) s"; grep -A3 "^target" $OUT/bench-$f-$b.txt
  done
done
{
for r in 1 2; do for b in old new; do
  bin=.dev/bin/weft; [ $b = old ] && bin=.dev/bin/weft-old
  echo "bert_base f32 cuda $b: $(timeout 40 $bin model run zoo:bert_base --target cuda 2>&1 | grep -E '^(median|error)' | tr -s ' ' | tr '\n' ' ')"
done; done
} > $OUT/bert-f32.txt 2>&1; cut -c1-160 $OUT/bert-f32.txt
echo "done at $(( $(date +%s) - start )) s"
