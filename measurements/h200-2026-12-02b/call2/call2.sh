#!/usr/bin/env bash
# Call 2 (twenty-first session): products whole beside sibling anchors on Vulkan
# (WEFT_SPLIT_BESIDE: 0 split as before, views the default, all every fp16 product),
# the ten corpus CNNs at batch 1 and 8, f16, `weft model run --iters 30` medians; the
# `barriers` line gives the dispatch count. Round 1 every setting (views checked against
# float64 where the reference is small enough), round 2 in the opposite order on the
# models with siblings (0 and views only, while the call has time).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
ALL=googlenet,inception_v3,resnet50,shufflenet_v2,regnet_y_400mf,resnext50_32x4d,densenet121,mobilenet_v2,efficientnet_b0,convnext_tiny
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 --models $ALL --json /tmp/b1.json > /tmp/e1.txt 2>&1 &
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 --models $ALL --json /tmp/b8.json > /tmp/e8.txt 2>&1 &
wait
echo "exported $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { # setting batch model [check]
  local c="--no-check"; [ "${4:-}" = check ] && c=""
  echo "== $3 b$2 beside=$1 $(WEFT_SPLIT_BESIDE=$1 timeout 60 $W model run /tmp/ws$2/$3/model.onnx --target vulkan --dtype f16 --iters 30 $c 2>&1 \
    | grep -E '^(median|barriers|error|weft:|check)' | sed -E 's/ \(the runtime orders.*//; s/kernel time of the whole model//' | tr '\n' ' ')"
}
SIB="googlenet inception_v3 resnet50 shufflenet_v2 regnet_y_400mf resnext50_32x4d"
for b in 1 8; do for m in ${ALL//,/ }; do r 0 $b $m; r views $b $m $([ $b = 1 ] && echo check); r all $b $m; done; done >> $OUT/runs.txt 2>&1
echo "round1 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
for b in 1 8; do for m in $SIB; do [ $(( $(date +%s) - T0 )) -gt 500 ] && break 2; r views $b $m; r 0 $b $m; done; done >> $OUT/runs.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
