#!/usr/bin/env bash
# Call 4 (thirteenth session): the rule's fix (a wave's blocks asked of ptxas for one-row products only; call 3's
# batch-8 step ran 12.9 ms with gate/up and the head spilling), and issue 60's figures it left: TinyLlama-shaped
# fp16 decode at batch 8 × 128 and 1 × 1024 on cuda beside Hugging Face's StaticCache replayed as one CUDA graph
# (in this call), the first case's per-kernel table; and the random-weight Hugging Face checkpoints against
# transformers' greedy generate in f32 (--check).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; } > $OUT/version.txt
timeout 430 python3 scripts/generate_check.py --weft $W --check --speed --targets cuda \
  --cases 8x128,1x1024 --kernels --weft-timeout 150 --json $OUT/gen-speed.json --save $OUT/gen-speed.txt \
  > $OUT/gen.log 2>&1
echo "speed rc=$? $(( $(date +%s) - T0 )) s"
grep -v '"ids"' $OUT/gen.log | cut -c1-400 | tail -30
