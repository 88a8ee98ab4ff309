#!/usr/bin/env bash
# Call 9 (ninth session): issue 59 at batch 1 in one speed.py --hold run at 0672228 (grouped filters
# RSCK, narrow grouped tiles where 64 rows give every multiprocessor a block); RegNetY/ResNeXt-50 at
# batch 1 against call 8's binary (bin/weft-base: narrow tiles wherever the product is narrow).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
mkdir -p /tmp/o
{ $W --version; .dev/bin/weft-base --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > /tmp/o/version9.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 300 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 1 --hold --hold-timeout 240 \
  --weft-targets cuda:f16 --json /tmp/o/corpus-b1.json > /tmp/o/corpus-b1.txt 2>&1
echo "b1 rc=$? $(( $(date +%s) - T0 )) s"
[ -f /tmp/o/corpus-b1.json ] || mv /tmp/o/corpus-b1.json.partial /tmp/o/corpus-b1.json 2>/dev/null
grep -E '^(prepared|PyTorch|\| [a-z]|Geometric)' /tmp/o/corpus-b1.txt | cut -c1-200
for r in 1 2; do for m in regnet_y_400mf resnext50_32x4d; do for bin in weft-base weft; do
  echo "$r $m $bin $(timeout 40 .dev/bin/$bin model bench /tmp/weft-speed/$m/model.onnx --targets cuda --dtype f16 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"
done; done; done | tee /tmp/o/ab9.txt
echo "$(timeout 40 $W model run /tmp/weft-speed/regnet_y_400mf/model.onnx --target cuda --dtype f16 2>&1 | grep -E '^error')" | tee -a /tmp/o/ab9.txt
tar czf $OUT/call9.tgz -C /tmp o
echo "done $(( $(date +%s) - T0 )) s"
