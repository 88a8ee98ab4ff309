#!/usr/bin/env bash
# Call 3 (seventeenth session): issue 59's fp32 and Vulkan columns with main's binary (02cdf69), weft alone
# (--no-torch): all 15 corpus models at batch 8 (cuda f32, vulkan f16, vulkan f32: columns the batch-8 table
# has never had), then batch 1 (the same columns, last measured 2026-11-29 with an older binary).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 300 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 8 --no-torch \
  --weft-targets cuda:f32,vulkan:f16,vulkan:f32 --json $OUT/corpus-b8-weft.json > $OUT/corpus-b8-weft.txt 2>&1
echo "b8 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b8-weft.json ] || mv $OUT/corpus-b8-weft.json.partial $OUT/corpus-b8-weft.json 2>/dev/null
grep -E '^(\| [a-z])' $OUT/corpus-b8-weft.txt | cut -c1-200
timeout 240 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 1 --no-torch --work /tmp/ws1 \
  --weft-targets cuda:f32,vulkan:f16,vulkan:f32 --json $OUT/corpus-b1-weft.json > $OUT/corpus-b1-weft.txt 2>&1
echo "b1 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b1-weft.json ] || mv $OUT/corpus-b1-weft.json.partial $OUT/corpus-b1-weft.json 2>/dev/null
grep -E '^(\| [a-z])' $OUT/corpus-b1-weft.txt | cut -c1-200
