#!/usr/bin/env bash
# Call 12 (tenth session): ConvNeXt-tiny A/B at batch 1 and 8 (bin/weft: depthwise template by outputs,
# not pixels; bin/weft-base main); the depthwise template's whole space at ConvNeXt's 7x7s, batch 1
# and 8; ncu of ResNet-50's batch-8 layer3 1x1 conv with its residual epilogue, and of the depthwise op.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft; B=.dev/bin/weft-base
mkdir -p /tmp/o
{ $W --version; $B --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > /tmp/o/version12.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 120 python3 scripts/speed.py --dry-run --no-torch --batch 8 --jobs 2 --models convnext_tiny \
  --json /tmp/o/exp8.json > /tmp/o/exp8.txt 2>&1 &
timeout 120 python3 scripts/speed.py --dry-run --no-torch --batch 1 --jobs 2 --work /tmp/ws1 --models convnext_tiny \
  --json /tmp/o/exp1.json > /tmp/o/exp1.txt 2>&1 &
timeout 100 $W sweep --op depthwise-conv2d-f16 --target cuda --sample 400 --budget-ms 3 \
  --shapes "b=1,c=96,h=56,w=56,k=7,stride=1;b=1,c=192,h=28,w=28,k=7,stride=1;b=1,c=384,h=14,w=14,k=7,stride=1;b=1,c=768,h=7,w=7,k=7,stride=1;b=8,c=96,h=56,w=56,k=7,stride=1;b=8,c=192,h=28,w=28,k=7,stride=1;b=8,c=384,h=14,w=14,k=7,stride=1;b=8,c=768,h=7,w=7,k=7,stride=1" \
  --trials --json /tmp/o/dw-all.json > /tmp/o/dw-all.txt 2>&1
echo "dw $(( $(date +%s) - T0 )) s"; head -12 /tmp/o/dw-all.txt | cut -c1-200
wait
echo "export $(( $(date +%s) - T0 )) s"
C8=/tmp/weft-speed/convnext_tiny/model.onnx; C1=/tmp/ws1/convnext_tiny/model.onnx
for r in 1 2; do for bin in weft-base weft; do for spec in "$C1 b1" "$C8 b8"; do set -- $spec
  echo "$r $bin $2 $(timeout 60 .dev/bin/$bin model bench $1 --targets cuda --dtype f16 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"
done; done; done | tee /tmp/o/ab12.txt
echo "ab $(( $(date +%s) - T0 )) s"
timeout 60 $W model bench $C8 --targets cuda --dtype f16 --iters 20 > /tmp/o/bench8-convnext.txt 2>&1
echo "$C8 $(timeout 120 $W model run $C8 --target cuda --dtype f16 2>&1 | grep -iE '^error|wrong|check' | head -3 | tr '\n' ' ')" | tee /tmp/o/checks12.txt
echo "checks $(( $(date +%s) - T0 )) s"
timeout 90 ncu --clock-control none -k regex:layer3_1_conv3 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
  $W model bench zoo:resnet50 --batch 8 --targets cuda --dtype f16 --iters 1 --no-kernels > /tmp/o/ncu-r50-l3c3.txt 2>&1
timeout 90 ncu --clock-control none -k regex:layer3_1_conv1 -c 1 --section SpeedOfLight --section WarpStateStats --section Occupancy \
  $W model bench zoo:resnet50 --batch 8 --targets cuda --dtype f16 --iters 1 --no-kernels > /tmp/o/ncu-r50-l3c1.txt 2>&1
timeout 60 ncu --clock-control none -c 2 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
  $B run --op depthwise-conv2d-f16 --shape b=8,c=96,h=56,w=56,k=7,stride=1 --target cuda > /tmp/o/ncu-dw.txt 2>&1
echo "ncu $(( $(date +%s) - T0 )) s"
tar czf $OUT/call12.tgz -C /tmp o
echo "done $(( $(date +%s) - T0 )) s"
