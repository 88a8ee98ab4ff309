#!/usr/bin/env bash
# Call 1 (twenty-first session): (a) the windowed pools' vector path on Vulkan
# (WEFT_POOL_VEC=0 the reduction rule, =1 the vector path, now on every target), A/B at
# batch 8 on the four CNNs with windowed pools, two rounds in opposite orders, the
# vector runs checked against weft's float64 reference in round 1; (b) per-kernel tables
# (cuda and vulkan, f16, with the waits column) of the CNN rows still under 0.5x: b1
# googlenet, densenet121, mobilenet_v2; b8 resnet50, densenet121, convnext_tiny;
# (c) GoogLeNet b1 WEFT_VK_SPLIT rule/0/0/rule under the new plan, with `barriers`.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
B1=googlenet,densenet121,mobilenet_v2
B8=inception_v3,googlenet,densenet121,resnet50,convnext_tiny
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 --models $B1 --json /tmp/b1.json > /tmp/e1.txt 2>&1 &
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 --models $B8 --json /tmp/b8.json > /tmp/e8.txt 2>&1 &
wait
echo "exported $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { # pool_vec model [check]
  local c="--no-check"; [ "${3:-}" = check ] && c=""
  echo "== $2 b8 pool_vec=$1 $(WEFT_POOL_VEC=$1 timeout 90 $W model run /tmp/ws8/$2/model.onnx --target vulkan --dtype f16 --iters 30 $c 2>&1 | grep -E '^(median|barriers|error|weft:|check)' | tr '\n' ' ')"
}
for m in inception_v3 googlenet densenet121 resnet50; do r 1 $m check; r 0 $m; done >> $OUT/runs.txt 2>&1
for m in inception_v3 googlenet densenet121 resnet50; do r 0 $m; r 1 $m; done >> $OUT/runs.txt 2>&1
echo "pools $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
for s in rule 0 0 rule; do echo "== googlenet b1 split=$s $(WEFT_VK_SPLIT=$s timeout 60 $W model run /tmp/ws1/googlenet/model.onnx \
  --target vulkan --dtype f16 --iters 30 --no-check 2>&1 | grep -E '^(median|barriers)' | tr '\n' ' ')"; done >> $OUT/runs.txt
echo "split $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
for m in googlenet densenet121 mobilenet_v2; do
  timeout 120 $W model bench /tmp/ws1/$m/model.onnx --targets cuda,vulkan --dtype f16 > $OUT/bench1-$m.txt 2>&1
done
echo "bench1 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
for m in resnet50 densenet121 convnext_tiny; do
  timeout 120 $W model bench /tmp/ws8/$m/model.onnx --targets cuda,vulkan --dtype f16 > $OUT/bench8-$m.txt 2>&1
done
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
