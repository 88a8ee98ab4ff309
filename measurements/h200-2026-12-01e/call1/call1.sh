#!/usr/bin/env bash
# Call 1 (nineteenth session): the Vulkan split rule over views against the dispatch it costs.
# WEFT_VK_SPLIT unset (the rule: parts of at least 128) against 256 and 0 (no split), Vulkan f16, the ten
# corpus CNNs at batch 1 and four at batch 8, two rounds in opposite orders; then the per-kernel tables
# (cuda and vulkan f16) of the four batch-1 CNNs below 0.5x CUDA, under the rule and under the best variant.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
B1=googlenet,mobilenet_v2,shufflenet_v2,densenet121,resnet50,inception_v3,regnet_y_400mf,resnext50_32x4d,efficientnet_b0,convnext_tiny
B8=googlenet,densenet121,inception_v3,resnet50
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 --models $B1 --json /tmp/b1.json > /tmp/e1.txt 2>&1 &
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 --models $B8 --json /tmp/b8.json > /tmp/e8.txt 2>&1 &
wait
echo "exported $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { # variant batch model
  local e=""; [ $1 != u ] && e="WEFT_VK_SPLIT=$1"
  echo "== $3 b$2 $1 $(env $e timeout 60 $W model run /tmp/ws$2/$3/model.onnx --target vulkan --dtype f16 --iters 30 --no-check 2>&1 | grep -E '^median' | head -1)"
}
round() {
  for v in "$@"; do
    for m in ${B1//,/ }; do r $v 1 $m; done
    for m in ${B8//,/ }; do r $v 8 $m; done
  done
}
round u 256 0 >> $OUT/runs.txt 2>&1
echo "round1 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
round 0 256 u >> $OUT/runs.txt 2>&1
echo "round2 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
mkdir -p /tmp/tables
for m in googlenet mobilenet_v2 shufflenet_v2 densenet121; do
  timeout 90 $W model bench /tmp/ws1/$m/model.onnx --targets cuda,vulkan --dtype f16 > /tmp/tables/bench1-$m.txt 2>&1
  WEFT_VK_SPLIT=0 timeout 90 $W model bench /tmp/ws1/$m/model.onnx --targets vulkan --dtype f16 > /tmp/tables/bench1-$m-split0.txt 2>&1
done
echo "tables $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cp /tmp/setup.txt /tmp/tables/
tar czf $OUT/tables.tgz -C /tmp tables
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
