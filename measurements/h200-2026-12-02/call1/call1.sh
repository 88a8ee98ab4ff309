#!/usr/bin/env bash
# Call 1 (twentieth session): the memory plan's reuse on Vulkan (WEFT_REUSE): the target's
# default (waiting: a slot reused only where the dispatch waits anyway) against always
# (the CUDA plan, what ran before) and never (a buffer per intermediate), Vulkan f16, the
# ten corpus CNNs at batch 1 and four at batch 8, two rounds in opposite orders; the first
# round's default runs checked against weft's float64 reference (the plan is lowering's).
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
r() { # variant batch model [check]
  local c="--no-check"; [ "${4:-}" = check ] && c=""
  echo "== $3 b$2 $1 $(WEFT_REUSE=$1 timeout 90 $W model run /tmp/ws$2/$3/model.onnx --target vulkan --dtype f16 --iters 30 $c 2>&1 | grep -E '^(median|memory|error|weft:)' | tr '\n' ' ')"
}
round() {
  local check=$1; shift
  for v in "$@"; do
    local c=""; [ $v = target ] && c=$check
    for m in ${B1//,/ }; do r $v 1 $m $c; done
    for m in ${B8//,/ }; do r $v 8 $m $c; done
  done
}
round check target always never >> $OUT/runs.txt 2>&1
echo "round1 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
round no never always target >> $OUT/runs.txt 2>&1
echo "round2 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
timeout 60 $W model bench /tmp/ws1/shufflenet_v2/model.onnx --targets cuda --dtype f16 > $OUT/bench-shufflenet-cuda.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
