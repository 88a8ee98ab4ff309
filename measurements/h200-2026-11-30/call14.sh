#!/usr/bin/env bash
# Call 14 (tenth session): bin/weft (K rotary before the GQA broadcast; depthwise template by outputs,
# register windows first on CUDA with [R,S,1,C] filters; whole fragments stored without per-element
# tests) against bin/weft-base (main 0672228): six corpus models at batch 1 and 8; weft against
# ONNX Runtime on ResNet-50 (batch 8) and BERT-base (batch 1).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft; B=.dev/bin/weft-base
mkdir -p /tmp/o
{ $W --version; $B --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > /tmp/o/version14.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
M=resnet50,convnext_tiny,inception_v3,llama_shaped,bert_base,gpt2
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 8 --jobs 6 --models $M --json /tmp/o/exp8.json > /tmp/o/exp8.txt 2>&1 &
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 1 --jobs 6 --work /tmp/ws1 --models $M --json /tmp/o/exp1.json > /tmp/o/exp1.txt 2>&1 &
wait
echo "export $(( $(date +%s) - T0 )) s"
for m in ${M//,/ }; do for spec in "/tmp/ws1/$m/model.onnx b1" "/tmp/weft-speed/$m/model.onnx b8"; do set -- $spec
  for bin in weft-base weft; do
  echo "$m $bin $2 $(timeout 60 .dev/bin/$bin model bench $1 --targets cuda --dtype f16 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"
done; done; done | tee /tmp/o/ab14.txt
echo "ab $(( $(date +%s) - T0 )) s"
( timeout 150 $W model check /tmp/weft-speed/resnet50/model.onnx --target cuda --dtype f16 > /tmp/o/check-r8.txt 2>&1; echo "rc=$?" >> /tmp/o/check-r8.txt ) &
( timeout 150 $W model check /tmp/ws1/bert_base/model.onnx --target cuda --dtype f16 > /tmp/o/check-b1.txt 2>&1; echo "rc=$?" >> /tmp/o/check-b1.txt ) &
timeout 60 $W model bench /tmp/weft-speed/resnet50/model.onnx --targets cuda --dtype f16 --iters 20 > /tmp/o/bench8-resnet50.txt 2>&1
timeout 60 $W model bench /tmp/weft-speed/convnext_tiny/model.onnx --targets cuda --dtype f16 --iters 20 > /tmp/o/bench8-convnext.txt 2>&1
wait
for f in check-r8 check-b1; do echo "== $f"; grep -iE "verdict|error|rc=" /tmp/o/$f.txt | head -4 | cut -c1-200; done
echo "checks $(( $(date +%s) - T0 )) s"
tar czf $OUT/call14.tgz -C /tmp o
echo "done $(( $(date +%s) - T0 )) s"
