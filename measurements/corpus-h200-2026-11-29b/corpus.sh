#!/usr/bin/env bash
# 2026-11-29: the model corpus (issue 57) on the GPU machine, one family set per call.
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
export WEFT_RECORDS=/tmp/none.json
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > $OUT/pip.txt 2>&1
python3 -c 'import onnxscript, torch, timm, transformers; print(torch.__version__, timm.__version__, transformers.__version__, onnxscript.__version__)' > $OUT/versions.txt 2>&1
timeout ${LIMIT:-540} python3 scripts/corpus.py --weft .dev/bin/weft --targets cuda:f32,cuda:f16,vulkan:f16 \
  --models "$1" --jobs 16 --weft-timeout 150 --json $OUT/corpus-$2.json --doc $OUT/corpus-$2.md > $OUT/log-$2.txt 2>&1
echo "exit $?"
tail -40 $OUT/log-$2.txt
