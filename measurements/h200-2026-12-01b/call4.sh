#!/usr/bin/env bash
# Call 4 (seventeenth session): the branch-free WGSL gathers (WEFT_VK_CONV=2: the deep k steps, main's default on
# Vulkan, plus guarded copies without a branch) against main's default (unset) on Vulkan f16, the wider A/B the
# fourteenth session asked for before making them the default: the CNNs closest to Vulkan >= 0.5x CUDA at batch 1
# and 8, BERT-base at batch 1, the 4-layer TinyLlama-shaped decode step on Vulkan (its attention's guarded copies).
# Two rounds in opposite orders.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 \
  --models googlenet,mobilenet_v2,shufflenet_v2,regnet_y_400mf,resnext50_32x4d,densenet121,bert_base --json /tmp/b1.json > /tmp/e1.txt 2>&1 &
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 \
  --models regnet_y_400mf,efficientnet_b0,mobilenet_v2 --json /tmp/b8.json > /tmp/e8.txt 2>&1 &
wait
echo "exported $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { echo "== $1 $2 $3 $(timeout 60 $W model run $4 --target vulkan --dtype f16 --iters 30 --no-check 2>&1 | grep -E '^median' | head -1)"; }
one() { # round order
  for v in $1 $2; do
    for m in googlenet mobilenet_v2 shufflenet_v2 regnet_y_400mf resnext50_32x4d densenet121 bert_base; do
      if [ $v = u ]; then r $m b1 $v /tmp/ws1/$m/model.onnx; else WEFT_VK_CONV=2 r $m b1 $v /tmp/ws1/$m/model.onnx; fi
    done
    for m in regnet_y_400mf efficientnet_b0 mobilenet_v2; do
      if [ $v = u ]; then r $m b8 $v /tmp/ws8/$m/model.onnx; else WEFT_VK_CONV=2 r $m b8 $v /tmp/ws8/$m/model.onnx; fi
    done
  done
}
one u 2 >> $OUT/runs.txt 2>&1
echo "round1 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
for v in u 2; do
  if [ $v = u ]; then E=; else E="WEFT_VK_CONV=2"; fi
  echo "== llama4 $v $(env $E timeout 60 $W model generate zoo:llama --target vulkan --dtype f16 --layers 4 --prompt-tokens 128 \
    --new-tokens 32 --iters 10 2>&1 | grep -E '^decode step .*device')"
done >> $OUT/runs.txt 2>&1
echo "llama $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
one 2 u >> $OUT/runs.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
