#!/usr/bin/env bash
# Call 3 (twenty-first session): which products to keep whole on Vulkan, after call 2
# found siblings alone the wrong test (GoogLeNet b1 626 -> 494 us over views, 424 for
# every product, but Inception-v3 1.06 -> 1.78 ms, ResNet-50 537 -> 606 us). Variants of
# WEFT_SPLIT_BESIDE: 0 (the rule), all (every fp16 product beside siblings), all:1728 and
# all:1152 (those at most that long), views:1728, short:576 (every fp16 product at most
# 576 long, siblings or not). `weft model run --iters 30` medians, Vulkan f16.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
ALL=googlenet,inception_v3,resnet50,shufflenet_v2,resnext50_32x4d,densenet121,mobilenet_v2,efficientnet_b0,regnet_y_400mf
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 --models $ALL --json /tmp/b1.json > /tmp/e1.txt 2>&1 &
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 --models $ALL --json /tmp/b8.json > /tmp/e8.txt 2>&1 &
wait
echo "exported $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { # setting batch model
  echo "== $3 b$2 beside=$1 $(WEFT_SPLIT_BESIDE=$1 timeout 60 $W model run /tmp/ws$2/$3/model.onnx --target vulkan --dtype f16 --iters 30 --no-check 2>&1 \
    | grep -E '^(median|barriers|error|weft:)' | sed -E 's/ \(the runtime orders.*//; s/kernel time of the whole model//; s/kernels wait behind a barrier for every kernel before them, .*//' | tr '\n' ' ')"
}
for b in 1 8; do
  for m in googlenet inception_v3 resnet50 resnext50_32x4d shufflenet_v2; do
    for s in 0 all all:1728 all:1152 views:1728 short:576; do r $s $b $m; done
  done
  for m in densenet121 mobilenet_v2 efficientnet_b0 regnet_y_400mf; do r 0 $b $m; r short:576 $b $m; done
done >> $OUT/runs.txt 2>&1
echo "round1 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
for b in 1 8; do for m in googlenet inception_v3 resnet50 resnext50_32x4d; do
  [ $(( $(date +%s) - T0 )) -gt 480 ] && break 2
  for s in short:576 views:1728 all:1152 all:1728 all 0; do r $s $b $m; done
done; done >> $OUT/runs.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
