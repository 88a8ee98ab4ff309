#!/usr/bin/env bash
# Call 5 (fourteenth session, the same warm machine as call 4): a second round of call 4's Vulkan rows at
# WEFT_VK_CONV=0 and 2, in the reverse order, and the guards (the zoo's ResNet-50 and BERT-base on Vulkan), with
# GoogLeNet's check against float64 at 2.
set -u
export OUT=${OUT:?} XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
for m in densenet121 shufflenet_v2 mobilenet_v2 googlenet; do
  for v in 2 0; do
    echo "== WEFT_VK_CONV=$v $m" | tee -a $OUT/rows.txt
    WEFT_VK_CONV=$v timeout 60 .dev/bin/weft model bench /tmp/weft-speed/$m/model.onnx --targets vulkan --dtype f16 \
      --no-kernels 2>&1 | grep -E "^vulkan" | tee -a $OUT/rows.txt
  done
done
for v in 0 2; do
  for z in resnet50 bert_base; do
    echo "== WEFT_VK_CONV=$v zoo:$z" | tee -a $OUT/rows.txt
    WEFT_VK_CONV=$v timeout 60 .dev/bin/weft model bench zoo:$z --targets vulkan --dtype f16 --no-kernels 2>&1 \
      | grep -E "^vulkan" | tee -a $OUT/rows.txt
  done
done
echo "== WEFT_VK_CONV=2 googlenet check" | tee -a $OUT/rows.txt
WEFT_VK_CONV=2 timeout 90 .dev/bin/weft model run /tmp/weft-speed/googlenet/model.onnx --target vulkan --dtype f16 2>&1 \
  | grep -iE "error|check|max" | head -5 | tee -a $OUT/rows.txt
echo "t $(( $(date +%s) - T0 )) s" | tee -a $OUT/rows.txt
