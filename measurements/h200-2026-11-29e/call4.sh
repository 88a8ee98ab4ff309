#!/usr/bin/env bash
# Call 4 of 2026-11-29 (fifth session): decode after split-KV attention + f16 caches + Rotary + gemv refit:
# HF ids (f32), TinyLlama fp16 decode beside PyTorch StaticCache CUDA graph, Vulkan, the decode attention sweep.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
W=.dev/bin/weft
timeout 60 $W sweep --op attention-f16 --shapes llama-decode --target cuda --sample 0 --json $OUT/attn-sweep.json > $OUT/attn-sweep.txt 2>&1
echo "sweep exit $?"; tail -12 $OUT/attn-sweep.txt | cut -c1-220
timeout 120 python3 scripts/generate_check.py --weft $W --check --json $OUT/gen-check.json > $OUT/gen-check.txt 2>&1
echo "check exit $?"; grep '^{' $OUT/gen-check.txt | cut -c1-300
timeout 330 python3 scripts/generate_check.py --weft $W --speed --cases 1x128,8x128,1x1024 \
  --targets cuda --weft-timeout 150 --kernels --save $OUT/gen-weft.txt --json $OUT/gen-speed.json > $OUT/gen-speed.txt 2>&1
echo "speed exit $?"; grep '^{' $OUT/gen-speed.txt | cut -c1-700
grep -E "^(decode step|bandwidth|memory|prefill|first token)" $OUT/gen-weft.txt | head -15
echo "wall $(( $(date +%s) - T0 )) s"
timeout 100 $W model generate zoo:llama --target vulkan --dtype f16 --prompt-tokens 128 --new-tokens 32 --iters 10 > $OUT/gen-vulkan.txt 2>&1
echo "vulkan exit $?"; grep -E "^(decode step|bandwidth|prefill)" $OUT/gen-vulkan.txt
echo "wall $(( $(date +%s) - T0 )) s"
