#!/usr/bin/env bash
# Call 8 (ninth session): issue 59 at batch 8 in one speed.py --hold run with the grouped filters RSCK
# and the narrow grouped tiles; ResNeXt-50/RegNetY A/B narrow (bin/weft) against filter-only
# (bin/weft-base, 8d3fce5) at batch 1 and 8; checks.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft; B=.dev/bin/weft-base
mkdir -p /tmp/o
{ $W --version; $B --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > /tmp/o/version8.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 330 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 8 --hold --hold-timeout 260 \
  --weft-targets cuda:f16 --json /tmp/o/corpus-b8.json > /tmp/o/corpus-b8.txt 2>&1
echo "b8 rc=$? $(( $(date +%s) - T0 )) s"
[ -f /tmp/o/corpus-b8.json ] || mv /tmp/o/corpus-b8.json.partial /tmp/o/corpus-b8.json 2>/dev/null
grep -E '^(prepared|PyTorch|\| [a-z]|Geometric)' /tmp/o/corpus-b8.txt | cut -c1-200
timeout 100 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 \
  --models resnext50_32x4d,regnet_y_400mf --json /tmp/exp1.json > /tmp/exp1.txt 2>&1
for r in 1 2; do for m in resnext50_32x4d regnet_y_400mf; do for bin in weft-base weft; do
  for spec in "/tmp/ws1/$m/model.onnx b1" "/tmp/weft-speed/$m/model.onnx b8"; do
    set -- $spec
    echo "$r $m $bin $2 $(timeout 60 .dev/bin/$bin model bench $1 --targets cuda --dtype f16 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"
  done; done; done; done | tee /tmp/o/ab8.txt
echo "ab $(( $(date +%s) - T0 )) s"
for m in resnext50_32x4d regnet_y_400mf; do for f in /tmp/ws1/$m/model.onnx /tmp/weft-speed/$m/model.onnx; do
  echo "$f $(timeout 60 $W model run $f --target cuda --dtype f16 2>&1 | grep -iE '^error|wrong' | head -2 | tr '\n' ' ')"
done; done | tee /tmp/o/checks8.txt
timeout 60 $W model bench /tmp/weft-speed/resnext50_32x4d/model.onnx --targets cuda --dtype f16 > /tmp/o/bench8-resnext.txt 2>&1
echo "checks $(( $(date +%s) - T0 )) s"
tar czf $OUT/call8.tgz -C /tmp o
echo "done $(( $(date +%s) - T0 )) s"
