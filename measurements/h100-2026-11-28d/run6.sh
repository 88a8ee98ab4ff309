#!/usr/bin/env bash
# Call 6 (2026-11-28d): the Vulkan conv rule over views of this session (1x2-fragment
# warps, k steps of 32, splits in parts of >= 128) against the block-count rule it
# replaced (`weft-old`, main before), in one call: the rule's pick at all 23 of
# ResNet-50's distinct layers (`--sample 0`), and the f16 CNNs end to end on Vulkan,
# old and new alternating.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
rm -rf .dev/bin; tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
for b in old new; do
  w=.dev/bin/weft; [ $b = old ] && w=.dev/bin/weft-old
  timeout 100 $w sweep --op conv2d-f16 --target vulkan --shapes resnet50 --sample 0 --budget-ms 5 \
    --json $OUT/rule-$b.json > $OUT/rule-$b.txt 2>&1
  echo "rule $b rc=$? at $(( $(date +%s) - start )) s"
done
for round in 1 2; do
  for b in old new; do
    w=.dev/bin/weft; [ $b = old ] && w=.dev/bin/weft-old
    for m in "zoo:resnet50 --batch 1" "zoo:resnet50 --batch 8" "zoo:mobilenet_v2 --batch 1" "zoo:inception_v3 --batch 1"; do
      r=$(timeout 60 $w model bench $m --dtype f16 --targets vulkan --no-kernels --iters 20 2>&1 | grep ^vulkan)
      echo "round $round $b $m: $r"
    done
  done
done 2>&1 | tee $OUT/models.txt
echo "done at $(( $(date +%s) - start )) s"
