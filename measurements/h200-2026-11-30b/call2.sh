#!/usr/bin/env bash
# Call 2 (eleventh session): issue 60's figures, second half — prompt 1024 at batch 1 and 8 on cuda, batch 1 on
# vulkan, beside Hugging Face's StaticCache replayed as one CUDA graph (all in this call), the first case's
# per-kernel table; and the random-weight Hugging Face checkpoint against transformers' greedy generate in f32.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; } > $OUT/version.txt
timeout 560 python3 scripts/generate_check.py --weft $W --check --speed --targets cuda,vulkan \
  --cases 1x1024,8x1024 --kernels --weft-timeout 200 --json $OUT/gen-speed-1024.json --save $OUT/gen-speed-1024.txt \
  > $OUT/gen-1024.log 2>&1
echo "speed rc=$? $(( $(date +%s) - T0 )) s"
grep -v '"ids"' $OUT/gen-1024.log | cut -c1-400 | tail -30
