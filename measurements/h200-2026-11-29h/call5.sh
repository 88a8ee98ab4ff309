#!/usr/bin/env bash
# Call 5 of 2026-11-29 (eighth session): issue 59's figures with this session's fixes (98f68dd):
# batch 1, PyTorch and weft's cuda f16 in one speed.py --hold run (the one-call verdict); batch 8,
# weft's cuda f16 again for the six models the fixes touch (call 2 has PyTorch's); then, with the time
# left, the fp16 implicit-GEMM convolution's rule against tuning at ResNet-50's batch-8 3×3s.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version5.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 300 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 1 --hold --hold-timeout 240 \
  --weft-targets cuda:f16 --json $OUT/corpus-b1.json > $OUT/corpus-b1.txt 2>&1
echo "b1 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b1.json ] || mv $OUT/corpus-b1.json.partial $OUT/corpus-b1.json 2>/dev/null
grep -E '^(prepared|PyTorch|\| [a-z]|Geometric)' $OUT/corpus-b1.txt | cut -c1-300
timeout 120 python3 scripts/speed.py --weft $W --jobs 8 --iters 20 --batch 8 --no-torch --weft-targets cuda:f16 \
  --models inception_v3,convnext_tiny,efficientnet_b0,mobilenet_v2,bert_base,distilbert \
  --json $OUT/corpus-b8-weft.json > $OUT/corpus-b8-weft.txt 2>&1
echo "b8 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b8-weft.json ] || mv $OUT/corpus-b8-weft.json.partial $OUT/corpus-b8-weft.json 2>/dev/null
grep -E '^\| [a-z]' $OUT/corpus-b8-weft.txt | cut -c1-200
left=$(( 500 - ($(date +%s) - T0) ))
if [ $left -gt 30 ]; then
  timeout $left $W sweep --op conv2d-f16 --target cuda --sample 24 --budget-ms 4 \
    --shapes "n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1;n=8,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1;n=8,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1" \
    --json $OUT/sweep-conv-b8.json > $OUT/sweep-conv-b8.txt 2>&1
  echo "sweep rc=$? $(( $(date +%s) - T0 )) s"; grep -vE "^weft:" $OUT/sweep-conv-b8.txt | tail -8 | cut -c1-250
fi
echo "done $(( $(date +%s) - T0 )) s"
