#!/usr/bin/env bash
# 2026-11-27g, call 1 (main 1c44094): subgroup shuffles in the row reductions' trees and
# attention's row statistics. (1) Correctness on the GPU: the zoo and exported models
# against ONNX Runtime (models test binary) on CUDA and Vulkan; every `weft model run`
# below also checks against the float64 reference and replays. (2) The transformers by
# the rule, old (main 028b1b3, shared-memory trees) and new alternating, f16, CUDA and
# Vulkan. (3) Per kernel (`weft model bench`), GPT-2 at 512 tokens, old and new.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
{
  echo "== models-x"
  WEFT_REQUIRE=cuda,vulkan timeout 200 .dev/checks/models-x --test-threads=1 2>&1 | tail -n 8
  echo "exit ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s"
} > $OUT/checks.txt 2>&1
grep -E "^(==|exit|test result)" $OUT/checks.txt
{
for m in "bert_base" "gpt2" "gpt2 --seq 512" "bert_base --batch 8"; do
  for t in cuda vulkan; do for b in old new; do
    bin=.dev/bin/weft; [ $b = old ] && bin=.dev/bin/weft-old
    echo "$m f16 $t $b: $(timeout 40 $bin model run zoo:$m --dtype f16 --target $t 2>&1 | grep -E '^(median|error|replayed)' | tr -s ' ' | tr '\n' ' ')"
  done; done
done
} > $OUT/models.txt 2>&1; cat $OUT/models.txt | cut -c1-200
echo "models at $(( $(date +%s) - start )) s"
for b in old new; do
  bin=.dev/bin/weft; [ $b = old ] && bin=.dev/bin/weft-old
  timeout 100 $bin model bench zoo:gpt2 --seq 512 --dtype f16 --targets cuda,vulkan > $OUT/bench-gpt2seq512-$b.txt 2>&1
  echo "bench $b rc=$? at $(( $(date +%s) - start )) s"; grep -A3 "^target" $OUT/bench-gpt2seq512-$b.txt
done
