#!/usr/bin/env bash
# 2026-11-27g: the GPU check of the fp32 refit on PDL data (branch refit-pdl): the 60
# `mixed` shapes with the refit rule beside a 48-config tuning, and the fp32 CNNs with
# main's rule and the refit's alternating (as 27f's run1.sh checked the refit before).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
timeout 300 .dev/bin/weft-refit sweep --op matmul --target cuda --shapes mixed --sample 48 --budget-ms 10 \
  --json $OUT/refit-mixed.json > $OUT/refit-mixed.txt 2>&1
echo "mixed rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/refit-mixed.txt | tail -3
{
for m in resnet50 inception_v3 mobilenet_v2; do for b in main refit; do
  bin=.dev/bin/weft; [ $b = refit ] && bin=.dev/bin/weft-refit
  echo "$m fp32 cuda $b: $(timeout 30 $bin model run zoo:$m --target cuda 2>&1 | grep -E '^(median|error)' | tr -s ' ' | tr '\n' ' ')"
done; done
} > $OUT/refit-models.txt 2>&1; cut -c1-150 $OUT/refit-models.txt
echo "done at $(( $(date +%s) - start )) s"
