#!/usr/bin/env bash
# Call 3 (twentieth session): the waiting plan beyond CNNs and beside the split switch.
# TinyLlama-shaped fp16 decode on Vulkan (zoo:llama's default shape, batch 1, prompt 128,
# 32 new tokens) under WEFT_REUSE target and always, two rounds; GoogLeNet at batch 1,
# Vulkan f16, WEFT_VK_SPLIT rule and 0 under the default plan, two rounds.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 --models googlenet --json /tmp/b1.json > /tmp/e1.txt 2>&1 &
g() { echo "== llama $1 $(WEFT_REUSE=$1 timeout 120 $W model generate zoo:llama --target vulkan --dtype f16 --prompt-tokens 128 --new-tokens 32 2>&1 | grep -Ei 'decode|prefill|memory|weft:' | tr '\n' ' ')"; }
for v in target always always target; do g $v >> $OUT/runs.txt 2>&1; done
wait
echo "llama $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { echo "== googlenet b1 split=$1 $(WEFT_VK_SPLIT=$1 timeout 90 $W model run /tmp/ws1/googlenet/model.onnx --target vulkan --dtype f16 --iters 30 --no-check 2>&1 | grep -E '^(median|weft:)' | tr '\n' ' ')"; }
for v in rule 0 0 rule; do r $v >> $OUT/runs.txt 2>&1; done
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
