#!/usr/bin/env bash
# Call 4 (eighteenth session): WGSL index forms (WEFT_WGSL_INDEX: fast = unsigned divisions + eager logic, the new
# default; plain = before). Op at Inception's b8 5x5 (+ SASS of fast), Vulkan models A/B at b8 and b1, checks against ORT,
# Inception b8 per-kernel table on vulkan.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
for m in inception_v3 googlenet resnet50 densenet121; do
  [ -f /tmp/ws8/$m/model.onnx ] || timeout 90 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 --models $m --json /tmp/b8-$m.json > /tmp/e8-$m.txt 2>&1 &
done
for m in googlenet resnet50 mobilenet_v2; do
  [ -f /tmp/ws1/$m/model.onnx ] || timeout 90 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 --models $m --json /tmp/b1-$m.json > /tmp/e1-$m.txt 2>&1 &
done
wait
echo "exported $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { echo "== $1 $2 $3 $(WEFT_WGSL_INDEX=$3 timeout 60 $W model run $1 --target vulkan --dtype f16 --iters 50 --no-check 2>&1 | grep -E '^median|rror' | head -1)"; }
{
for round in 1 2; do
  for f in "/tmp/ws8/inception_v3/model.onnx b8" "/tmp/ws8/resnet50/model.onnx b8" "/tmp/ws8/googlenet/model.onnx b8" "/tmp/ws8/densenet121/model.onnx b8" \
           "/tmp/ws1/googlenet/model.onnx b1" "/tmp/ws1/resnet50/model.onnx b1" "/tmp/ws1/mobilenet_v2/model.onnx b1" "zoo:bert_base b1"; do
    set -- $f
    if [ $round = 1 ]; then r $1 $2 plain; r $1 $2 fast; else r $1 $2 fast; r $1 $2 plain; fi
  done
done
echo "a/b $(( $(date +%s) - T0 )) s"
echo "checks $(( $(date +%s) - T0 )) s"
} >> $OUT/runs.txt 2>&1
timeout 90 $W model bench /tmp/ws8/inception_v3/model.onnx --targets cuda,vulkan --dtype f16 > $OUT/bench8-inception_v3-fast.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
