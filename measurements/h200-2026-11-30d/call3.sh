#!/usr/bin/env bash
# Call 3 (thirteenth session): issue 60's figures at prompt 128 with main after the rule change (the skinny
# products ask ptxas for one wave's blocks; the head in one wave) — TinyLlama-shaped fp16 decode at batch 1
# and 8 on cuda and vulkan, beside Hugging Face's StaticCache replayed as one CUDA graph, in this call; then
# silu(gate)·up in the down-projection's loads (WEFT_SKINNY_PROLOGUE=1) re-measured under the new rule at
# 4 layers, three alternated rounds.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; } > $OUT/version.txt
timeout 420 python3 scripts/generate_check.py --weft $W --speed --targets cuda,vulkan --every-case \
  --cases 1x128,8x128 --kernels --weft-timeout 200 --json $OUT/gen-speed-128.json --save $OUT/gen-speed-128.txt \
  > $OUT/gen-128.log 2>&1
echo "speed rc=$? $(( $(date +%s) - T0 )) s" | tee $OUT/runs.txt
tail -20 $OUT/gen-128.log
run() { # label, env
  env $2 timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 \
    --prompt-tokens 128 --new-tokens 16 --iters 20 > /tmp/g.txt 2>&1
  echo "$1 $(grep -E '^decode step .*device' /tmp/g.txt | awk '{print $3}') $2"
}
{
for r in 1 2 3; do
  run base WEFT_NONE=1
  run prologue WEFT_SKINNY_PROLOGUE=1
done
} | tee -a $OUT/runs.txt
echo "done $(( $(date +%s) - T0 )) s" | tee -a $OUT/runs.txt
