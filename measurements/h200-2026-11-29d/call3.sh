#!/usr/bin/env bash
# Call 3 of 2026-11-29 (fourth session): the CNNs after grouped/depthwise/global-pool work; decode on Vulkan.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 330 python3 scripts/speed.py --weft .dev/bin/weft --jobs 8 --iters 30 --batch 1 \
  --models efficientnet_b0,resnext50_32x4d,regnet_y_400mf,convnext_tiny,mobilenet_v2,densenet121 \
  --weft-targets cuda:f16,cuda:f32 --json $OUT/speed.json --doc $OUT/speed.md > $OUT/speed-log.txt 2>&1
echo "speed exit $?"
grep -E '^\| [a-z]' $OUT/speed-log.txt | tail -8
timeout 150 .dev/bin/weft model generate zoo:llama --target vulkan --dtype f16 --prompt-tokens 128 --new-tokens 32 --iters 10 > $OUT/gen-vulkan.txt 2>&1
echo "vulkan generate exit $?"; grep -E "^(decode step|bandwidth|prefill|first token)" $OUT/gen-vulkan.txt
for m in resnext50_32x4d convnext_tiny; do
  [ $(( $(date +%s) - T0 )) -lt 520 ] || break
  timeout 30 .dev/bin/weft model bench /tmp/weft-speed/$m/model.onnx --dtype f16 --iters 10 > $OUT/bench-$m.txt 2>&1
done
echo "wall $(( $(date +%s) - T0 )) s"
