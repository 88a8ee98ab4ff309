#!/usr/bin/env bash
# Call 2 of 2026-11-29 (fourth session): generation — HF ids vs weft (f32), decode speed beside a StaticCache CUDA graph.
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
timeout 120 python3 scripts/generate_check.py --weft .dev/bin/weft --check --json $OUT/gen-check.json > $OUT/gen-check.txt 2>&1
echo "check exit $?"; grep '^{' $OUT/gen-check.txt | cut -c1-300
timeout ${SPEED_LIMIT:-400} python3 scripts/generate_check.py --weft .dev/bin/weft --speed --cases ${CASES:-1x128,8x128,1x1024} \
  --targets ${TARGETS:-cuda} --weft-timeout 170 --kernels --save $OUT/gen-weft.txt --json $OUT/gen-speed.json > $OUT/gen-speed.txt 2>&1
echo "speed exit $?"; grep '^{' $OUT/gen-speed.txt | cut -c1-700
grep -E "^(decode step|bandwidth|memory|prefill|first token)" $OUT/gen-weft.txt | head -12
