#!/usr/bin/env bash
# Call 1 (twelfth session): issue 59 at batch 8, all 15 corpus models, one speed.py --hold run (PyTorch and
# weft in this call) with this session's binary; then batch 1 for ConvNeXt-tiny and the Llama-shaped
# decoder (the two models whose batch-1 kernels changed) the same way. Files written straight to $OUT.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version1.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 380 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 8 --hold --hold-timeout 260 \
  --weft-targets cuda:f16 --json $OUT/corpus-b8.json > $OUT/corpus-b8.txt 2>&1
echo "b8 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b8.json ] || mv $OUT/corpus-b8.json.partial $OUT/corpus-b8.json 2>/dev/null
grep -E '^(\| [a-z]|Geometric)' $OUT/corpus-b8.txt | cut -c1-200
timeout 150 python3 scripts/speed.py --weft $W --jobs 4 --iters 20 --batch 1 --hold --hold-timeout 120 --work /tmp/ws1 \
  --models convnext_tiny,llama_shaped --weft-targets cuda:f16 --json $OUT/corpus-b1-two.json > $OUT/corpus-b1-two.txt 2>&1
echo "b1 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b1-two.json ] || mv $OUT/corpus-b1-two.json.partial $OUT/corpus-b1-two.json 2>/dev/null
grep -E '^(\| [a-z]|Geometric)' $OUT/corpus-b1-two.txt | cut -c1-200
