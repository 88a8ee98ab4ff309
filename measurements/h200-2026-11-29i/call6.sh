#!/usr/bin/env bash
# Call 6 (ninth session, 2026-11-29): kmajor in the model (22 layers A/B + checks), the grouped
# convolutions' sweep (rule vs tuned vs cuDNN), ResNeXt-50/RegNetY per-kernel tables at batch 1.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version6.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
# exports in the background while the GPU runs the decoder
( timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 1 --models resnext50_32x4d,regnet_y_400mf \
    --json /tmp/exp.json > /tmp/exp.txt 2>&1 ) &
EXP=$!
mkdir -p /tmp/o
for v in 0 1; do
  WEFT_GEMV_KMAJOR=$v timeout 150 $W model generate zoo:llama --target cuda --dtype f16 \
    --prompt-tokens 128 --new-tokens 64 --iters 20 --kernels > /tmp/o/kmodel-l22-$v.txt 2>&1
  echo "l22 v=$v rc=$? $(( $(date +%s) - T0 )) s"
done
grep -H -E "^decode step|^memory|^decode" /tmp/o/kmodel-l22-*.txt | cut -c1-250
for d in f32 f16; do for b in 1 3; do
  WEFT_GEMV_KMAJOR=1 timeout 60 $W model generate zoo:llama --target cuda --dtype $d --layers 3 \
    --batch $b --new-tokens 8 --iters 1 --check 2>&1 | grep -E "^check|rror" | sed "s/^/$d b$b: /"
done; done
echo "checks $(( $(date +%s) - T0 )) s"
wait $EXP; tail -3 /tmp/exp.txt
for m in resnext50_32x4d regnet_y_400mf; do
  timeout 90 $W model bench /tmp/weft-speed/$m/model.onnx --targets cuda --dtype f16 > /tmp/o/bench1-$m.txt 2>&1
  grep -E "^cuda" /tmp/o/bench1-$m.txt
done
echo "bench $(( $(date +%s) - T0 )) s"
left=$(( 530 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && timeout $left $W sweep --op grouped-conv2d-f16 --target cuda --shapes grouped --sample 24 \
  --budget-ms 6 --json /tmp/o/grouped-f16.json > /tmp/o/grouped-f16.txt 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"; grep -vE "^weft:" /tmp/o/grouped-f16.txt | tail -30 | cut -c1-250
tar czf $OUT/call6.tgz -C /tmp o
echo "done $(( $(date +%s) - T0 )) s"
