#!/usr/bin/env bash
# The GPU check the fp32 refit (branch refit-fp32) still needs before it lands: main's
# binary as .dev/bin/weft-main, this branch's as .dev/bin/weft-refit (both with PDL).
# (1) the 60 `mixed` shapes, the refit rule beside a 48-config tuning (main: 27d fp32-mixed-2)
# (rule ≥ 0.8x tuned at every shape is issue 26's target); (2) the fp32 CNNs, whose
# implicit-GEMM anchors the rule picks (ResNet-50 gains 10 split kernels with the refit,
# offline), old and new alternating on CUDA and Vulkan.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
timeout 300 .dev/bin/weft-refit sweep --op matmul --target cuda --shapes mixed --sample 48 --budget-ms 10 \
  --json $OUT/refit-mixed.json > $OUT/refit-mixed.txt 2>&1
echo "mixed rc=$? at $(( $(date +%s) - start )) s"; tail -3 $OUT/refit-mixed.txt
{
for t in cuda vulkan; do for m in resnet50 inception_v3 mobilenet_v2; do for b in main refit main refit; do
  echo "$m fp32 $t $b: $(timeout 60 .dev/bin/weft-$b model run zoo:$m --target $t 2>&1 | grep -E '^(median|error)' | tr '\n' ' ')"
done; done; done
} > $OUT/refit-models.txt 2>&1; cat $OUT/refit-models.txt
echo "done at $(( $(date +%s) - start )) s"
