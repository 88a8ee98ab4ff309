#!/usr/bin/env bash
# Call 2 (seventeenth session): issue 60's decode figures with main's binary (02cdf69), PyTorch's StaticCache
# graph in this call: batch 1 x 128 and batch 8 x 128 (the few-column rule for 8-row products is new since the
# last 22-layer batch-8 figure), per-kernel tables; then weft against ONNX Runtime at batch 8 in f16 on two CNNs
# whose 8-row classifier heads now take that rule (ResNet-50, ConvNeXt-tiny).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; } > $OUT/version.txt
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 \
  --models resnet50,convnext_tiny --json /tmp/b8-export.json > /tmp/export.txt 2>&1 &
timeout 420 python3 scripts/generate_check.py --weft $W --speed --targets cuda \
  --cases 1x128,8x128 --kernels --weft-timeout 150 --json $OUT/gen-speed.json --save $OUT/gen-speed.txt \
  > $OUT/gen.log 2>&1
echo "speed rc=$? $(( $(date +%s) - T0 )) s"
wait
for m in resnet50 convnext_tiny; do
  echo "== check $m b8"; timeout 60 $W model check /tmp/ws8/$m/model.onnx --inputs /tmp/ws8/$m/in --target cuda --dtype f16 2>&1 | tail -4
done > $OUT/check8.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s"
grep -v '"ids"' $OUT/gen.log | cut -c1-400 | tail -30
cat $OUT/check8.txt
