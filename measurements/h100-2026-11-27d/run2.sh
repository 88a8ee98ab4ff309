#!/usr/bin/env bash
# 2026-11-27d, call 2 (binaries of the untested loads and the small-product row rule):
# every workload on CUDA and Vulkan against float64, the hand-built kernels, the zoo and
# exported models against ONNX Runtime (CUDA and Vulkan required); the 60-shape `mixed`
# fp32 figure again with the rule's row tile for small products; ResNet-50 fp32 on
# both targets, old and new binaries alternating.
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
timeout 300 .dev/bin/weft sweep --op matmul --target cuda --shapes mixed --sample 48 --budget-ms 10 \
  --json $OUT/fp32-mixed-2.json > $OUT/fp32-mixed-2.txt 2>&1; echo "mixed rc=$? at $(( $(date +%s) - start )) s"
tail -3 $OUT/fp32-mixed-2.txt
for t in cuda vulkan; do for b in old new old new; do
  W=.dev/bin/weft; [ $b = old ] && W=.dev/bin/weft-old
  echo "resnet50 fp32 $t $b: $(timeout 60 $W model run zoo:resnet50 --target $t 2>&1 | grep -E '^(median|error)|vs ' | tr '\n' ' ')"
done; done > $OUT/resnet.txt 2>&1
cat $OUT/resnet.txt; echo "done at $(( $(date +%s) - start )) s"
