#!/usr/bin/env bash
# Call 8 (eighteenth session): issue 59's CNNs at batch 1 (cuda f16, vulkan f16, vulkan f32) with the refined views rule,
# then ResNet-50 at batch 8 on vulkan f16 (refined rule against c7f7c0b, weft-base).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
timeout 90 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 --models resnet50 --json /tmp/b8r.json > /tmp/e8r.txt 2>&1 &
timeout 330 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 1 --no-torch --work /tmp/ws1 \
  --models resnet50,inception_v3,googlenet,shufflenet_v2,mobilenet_v2,regnet_y_400mf,densenet121,efficientnet_b0,resnext50_32x4d,convnext_tiny \
  --weft-targets cuda:f16,vulkan:f16,vulkan:f32 --json $OUT/corpus-b1-weft.json > $OUT/corpus-b1-weft.txt 2>&1
echo "b1 rc=$? $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
[ -f $OUT/corpus-b1-weft.json ] || mv $OUT/corpus-b1-weft.json.partial $OUT/corpus-b1-weft.json 2>/dev/null
wait
for b in weft weft-base weft; do echo "== resnet50 b8 $b $(timeout 40 .dev/bin/$b model run /tmp/ws8/resnet50/model.onnx --target vulkan --dtype f16 --iters 50 --no-check 2>&1 | grep -E '^median' | head -1)" >> $OUT/runs.txt; done
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt; grep -E '^(\| [a-z])' $OUT/corpus-b1-weft.txt | cut -c1-200
