#!/usr/bin/env bash
# Call 2 (twentieth session): WEFT_REUSE's default on Vulkan with the cap raised to twice
# the reused bytes or 64 MiB more (call 1's ShuffleNetV2 was held at twice), against never
# and always, Vulkan f16, the branchy CNNs, two rounds in opposite orders; the first
# round's default runs checked against weft's float64 reference.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
B1=googlenet,shufflenet_v2,inception_v3,efficientnet_b0
B8=googlenet,inception_v3
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
round check target never always >> $OUT/runs.txt 2>&1
echo "round1 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
round no always never target >> $OUT/runs.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
