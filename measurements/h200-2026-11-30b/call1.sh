#!/usr/bin/env bash
# Call 1 (eleventh session): issue 60's figures, first half — TinyLlama-shaped fp16 decode at batch 1 and 8,
# prompt 128, on cuda and vulkan (every case on both), beside Hugging Face's StaticCache replayed as one
# CUDA graph (generate_check.py --speed, all in this call), with the first case's per-kernel table.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; } > $OUT/version.txt
timeout 540 python3 scripts/generate_check.py --weft $W --speed --targets cuda,vulkan --every-case \
  --cases 1x128,8x128 --kernels --weft-timeout 200 --json $OUT/gen-speed-128.json --save $OUT/gen-speed-128.txt \
  > $OUT/gen-128.log 2>&1
echo "speed rc=$? $(( $(date +%s) - T0 )) s"
tail -30 $OUT/gen-128.log
