#!/usr/bin/env bash
# Call 1 (seventeenth session): issue 59's figures with main's binary (02cdf69: the sixteenth session's vector
# pools at batch >= 2 and the few-column rule for 8-row products): all 15 corpus models at batch 8, then at
# batch 1, each one speed.py --hold run (PyTorch and weft in this call), files straight to $OUT.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 265 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 8 --hold --hold-timeout 230 \
  --weft-targets cuda:f16 --json $OUT/corpus-b8.json > $OUT/corpus-b8.txt 2>&1
echo "b8 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b8.json ] || mv $OUT/corpus-b8.json.partial $OUT/corpus-b8.json 2>/dev/null
grep -E '^(\| [a-z]|Geometric)' $OUT/corpus-b8.txt | cut -c1-200
timeout 255 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 1 --hold --hold-timeout 220 --work /tmp/ws1 \
  --weft-targets cuda:f16 --json $OUT/corpus-b1.json > $OUT/corpus-b1.txt 2>&1
echo "b1 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b1.json ] || mv $OUT/corpus-b1.json.partial $OUT/corpus-b1.json 2>/dev/null
grep -E '^(\| [a-z]|Geometric)' $OUT/corpus-b1.txt | cut -c1-200
