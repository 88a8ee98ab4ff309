#!/usr/bin/env bash
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > $OUT/pip.txt 2>&1
timeout ${LIMIT:-560} python3 scripts/speed.py --weft .dev/bin/weft --jobs 8 --iters 30 --batch ${BATCH:-1} \
  --json $OUT/speed.json --doc $OUT/speed.md > $OUT/log.txt 2>&1
echo "exit $?"
grep -v Warning $OUT/log.txt | tail -30
