#!/usr/bin/env bash
# 2026-11-27f, call 1. (1) The GPU checks of main 7a07aac (the PDL refusal fallback and the
# single cuLaunchKernelEx path were not yet run on a GPU): workloads on CUDA and Vulkan vs
# float64, the hand-built kernels, the zoo and exported models vs ONNX Runtime.
# (2) The fp32 refit's check (branch refit-fp32 merged with main): the 60 `mixed` shapes,
# the refit rule beside a 48-config tuning; the fp32 CNNs, main and refit alternating.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
{
for t in .dev/checks/handmade-* .dev/checks/workloads-* .dev/checks/models-*; do
  echo "== $t"
  WEFT_REQUIRE=cuda,vulkan timeout 170 "$t" --test-threads=1 2>&1 | tail -n 6
  echo "exit ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s"
done
} > $OUT/checks.txt 2>&1
grep -E "^(==|exit|test result)" $OUT/checks.txt
timeout 270 .dev/bin/weft-refit sweep --op matmul --target cuda --shapes mixed --sample 48 --budget-ms 10 \
  --json $OUT/refit-mixed.json > $OUT/refit-mixed.txt 2>&1
echo "mixed rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/refit-mixed.txt | tail -3
{
for t in cuda vulkan; do for m in resnet50 inception_v3 mobilenet_v2; do for b in main refit; do
  echo "$m fp32 $t $b: $(timeout 30 .dev/bin/weft-$b model run zoo:$m --target $t 2>&1 | grep -E '^(median|error)' | tr '\n' ' ')"
done; done; done
} > $OUT/refit-models.txt 2>&1; cat $OUT/refit-models.txt
echo "done at $(( $(date +%s) - start )) s"
