#!/usr/bin/env bash
# Issue 57 item 5: the five models whose f16 error passed PyTorch fp16's on the corpus's
# one input, measured on 6 more inputs each (median over 7).
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > $OUT/pip.txt 2>&1
timeout 400 python3 scripts/corpus.py --weft .dev/bin/weft --targets cuda:f16,vulkan:f16 --f16-seeds 6 \
  --models tv_mobilenet_v3_small,tv_shufflenet_v2_x0_5,timm_efficientvit_b0,hf_qwen2,hf_whisper_encoder \
  --jobs 10 --weft-timeout 120 --json $OUT/f16-seeds.json --doc $OUT/f16-seeds.md > $OUT/log.txt 2>&1
echo "exit $?"; grep -E "right|wrong|models" $OUT/log.txt | tail -8; grep -E "over 7 inputs|at most PyTorch" $OUT/f16-seeds.md
