#!/usr/bin/env bash
# Calls 3-4 of 2026-11-29 (sixth session): scripts/speed.py over the corpus, one batch a call.
# BATCH (1 or 8), TARGETS (weft's columns), MODELS (default all), LIMIT (seconds).
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout ${LIMIT:-540} python3 scripts/speed.py --weft .dev/bin/weft --jobs 16 --iters 20 --batch ${BATCH:-1} \
  --models ${MODELS:-all} --weft-targets ${TARGETS:-cuda:f16} \
  --json $OUT/speed-b${BATCH:-1}.json --doc $OUT/speed-b${BATCH:-1}.md > $OUT/log-b${BATCH:-1}.txt 2>&1
echo "exit $?"
[ -f $OUT/speed-b${BATCH:-1}.json ] || cp $OUT/speed-b${BATCH:-1}.json.partial $OUT/ 2>/dev/null
grep -v Warning $OUT/log-b${BATCH:-1}.txt | grep -v "^ *warn" | tail -25 | cut -c1-400
