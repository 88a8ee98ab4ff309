#!/usr/bin/env bash
# 2026-11-27f, call 7 (main e9d6e86). Where the time goes, per kernel, for the rows that
# miss: GPT-2 f16 at 512 tokens (CUDA 1.74x PyTorch's CUDA graph, issue 27 asks 2x) and
# at batch 8 (Vulkan 0.25x CUDA), ResNet-50 f16 (Vulkan 0.33x CUDA): `weft model bench`
# on CUDA and Vulkan, each kernel group timed alone, by the rule (no records).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
for m in "gpt2 --seq 512" "gpt2 --batch 8" "resnet50"; do
  f=$(echo "$m" | tr -d ' -')
  timeout 120 .dev/bin/weft model bench zoo:$m --dtype f16 --targets cuda,vulkan > $OUT/bench-$f.txt 2>&1
  echo "$m rc=$? at $(( $(date +%s) - start )) s"; grep -A3 "^target" $OUT/bench-$f.txt
done
