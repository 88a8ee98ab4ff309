#!/usr/bin/env bash
# Call 15 (tenth session): bin/weft (call 14's, with 7x7 depthwise filters [R,S,1,C] only where the
# template takes them) against bin/weft-base (main 0672228), two rounds: ConvNeXt-tiny at batch 1 and 8,
# ResNet-50 and Inception-v3 at batch 1; ResNet-50's batch-1 per-kernel tables with both binaries.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft; B=.dev/bin/weft-base
mkdir -p /tmp/o
{ $W --version; $B --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > /tmp/o/version15.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 8 --jobs 2 --models convnext_tiny --json /tmp/o/exp8.json > /tmp/o/exp8.txt 2>&1 &
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 1 --jobs 3 --work /tmp/ws1 --models convnext_tiny,resnet50,inception_v3 --json /tmp/o/exp1.json > /tmp/o/exp1.txt 2>&1 &
wait
echo "export $(( $(date +%s) - T0 )) s"
for r in 1 2; do for spec in "/tmp/ws1/convnext_tiny/model.onnx c-b1" "/tmp/weft-speed/convnext_tiny/model.onnx c-b8" "/tmp/ws1/resnet50/model.onnx r-b1" "/tmp/ws1/inception_v3/model.onnx i-b1"; do set -- $spec
  for bin in weft-base weft; do
  echo "$r $2 $bin $(timeout 60 .dev/bin/$bin model bench $1 --targets cuda --dtype f16 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"
done; done; done | tee /tmp/o/ab15.txt
echo "ab $(( $(date +%s) - T0 )) s"
for bin in weft-base weft; do timeout 60 .dev/bin/$bin model bench /tmp/ws1/resnet50/model.onnx --targets cuda --dtype f16 --iters 20 > /tmp/o/bench1-resnet50-$bin.txt 2>&1; done
timeout 60 $W model bench /tmp/ws1/convnext_tiny/model.onnx --targets cuda --dtype f16 --iters 20 > /tmp/o/bench1-convnext.txt 2>&1
( timeout 100 $W model check /tmp/ws1/convnext_tiny/model.onnx --target cuda --dtype f16 > /tmp/o/check-c1.txt 2>&1; echo "rc=$?" >> /tmp/o/check-c1.txt )
grep -iE "verdict|rc=" /tmp/o/check-c1.txt
echo "done $(( $(date +%s) - T0 )) s"
tar czf $OUT/call15.tgz -C /tmp o
