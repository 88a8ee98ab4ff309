#!/usr/bin/env bash
# Call 1 (eighteenth session): (a) call 6 of the seventeenth: the refined wide tile, CUDA f16 b8, default vs WEFT_CONV_WIDE_MMA=0;
# (b) Vulkan b8: WEFT_VK_VIEWS=model vs default, 4 CNNs, 2 alternated rounds, + one checked run each;
# (c) Vulkan+CUDA per-kernel tables at b8 (Inception-v3, ResNet-50); (d) the vk-conv-b8 sweep with --trials, then the
# same shapes under WEFT_VK_VIEWS=model --sample 0.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
for m in inception_v3 googlenet resnet50 densenet121; do
  timeout 90 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 \
    --models $m --json /tmp/b8-$m.json > /tmp/e-$m.txt 2>&1 &
done
wait
echo "exported $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { echo "== $1 $2 $3 $(timeout 40 $W model run /tmp/ws8/$1/model.onnx --target $2 --dtype f16 --iters 50 --no-check 2>&1 | grep -E '^median|rror' | head -1)"; }
{
for round in 1 2; do
  for m in inception_v3 googlenet resnet50; do
    if [ $round = 1 ]; then WEFT_CONV_WIDE_MMA=0 r $m cuda wide0; r $m cuda default; else r $m cuda default; WEFT_CONV_WIDE_MMA=0 r $m cuda wide0; fi
  done
done
echo "cuda a/b $(( $(date +%s) - T0 )) s"
for round in 1 2; do
  for m in inception_v3 resnet50 googlenet densenet121; do
    if [ $round = 1 ]; then r $m vulkan default; WEFT_VK_VIEWS=model r $m vulkan vkmodel; else WEFT_VK_VIEWS=model r $m vulkan vkmodel; r $m vulkan default; fi
  done
done
echo "vulkan a/b $(( $(date +%s) - T0 )) s"
for m in inception_v3 resnet50; do
  echo "== check vkmodel $m"; WEFT_VK_VIEWS=model timeout 60 $W model run /tmp/ws8/$m/model.onnx --target vulkan --dtype f16 --iters 5 2>&1 | grep -iE "check|error|ort|max" | head -5
done
echo "checks $(( $(date +%s) - T0 )) s"
} >> $OUT/runs.txt 2>&1
for m in inception_v3 resnet50; do
  timeout 60 $W model bench /tmp/ws8/$m/model.onnx --targets cuda,vulkan --dtype f16 > $OUT/bench8-$m.txt 2>&1
done
WEFT_VK_VIEWS=model timeout 60 $W model bench /tmp/ws8/inception_v3/model.onnx --targets vulkan --dtype f16 > $OUT/bench8-inception_v3-vkmodel.txt 2>&1
echo "tables $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
SH="n=8,c=32,h=147,w=147,k=64,r=3,s=3,stride=1,pad=1;n=8,c=80,h=73,w=73,k=192,r=3,s=3,stride=1,pad=0;n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1;n=8,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1"
WEFT_VK_VIEWS=model timeout 90 $W sweep --op conv2d-f16 --target vulkan --sample 0 --budget-ms 4 --shapes "$SH" --json $OUT/vk-conv-b8-model.json > $OUT/vk-conv-b8-model.txt 2>&1
LEFT=$(( 575 - ($(date +%s) - T0) ))
echo "sweep budget $LEFT s" >> $OUT/runs.txt
timeout $LEFT $W sweep --op conv2d-f16 --target vulkan --sample 40 --trials --budget-ms 4 --shapes "$SH" --json $OUT/vk-conv-b8.json > $OUT/vk-conv-b8.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
cat $OUT/runs.txt
