#!/usr/bin/env bash
# Call 6 (fourteenth session, what was left of the device time): the Vulkan convolutions' deep k steps alone
# (WEFT_VK_CONV=deep, new) against 0 and 2, batch 1 f16, the four models of calls 4-5 and the zoo's ResNet-50
# and BERT-base as guards; GoogLeNet at `deep` against float64.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 TIMEOUT=150 bash scripts/device-run.sh run vkconv-export python3 scripts/speed.py --dry-run --no-torch \
  --batch 1 --models googlenet,mobilenet_v2,shufflenet_v2,densenet121 --json $OUT/vkconv-export.json > /tmp/export.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
for m in googlenet mobilenet_v2 shufflenet_v2 densenet121 zoo:resnet50 zoo:bert_base; do
  src=$m; case $m in zoo:*) ;; *) src=/tmp/weft-speed/$m/model.onnx;; esac
  for v in 0 deep 2 deep 0; do
    echo "== WEFT_VK_CONV=$v $m $(WEFT_VK_CONV=$v timeout 60 .dev/bin/weft model bench $src --targets vulkan --dtype f16 \
      --no-kernels 2>&1 | grep -E '^vulkan')" | tee -a $OUT/rows.txt
  done
done
echo "== WEFT_VK_CONV=deep googlenet check" | tee -a $OUT/rows.txt
WEFT_VK_CONV=deep timeout 90 .dev/bin/weft model run /tmp/weft-speed/googlenet/model.onnx --target vulkan --dtype f16 2>&1 \
  | grep -iE "error|check" | head -5 | tee -a $OUT/rows.txt
echo "t $(( $(date +%s) - T0 )) s" | tee -a $OUT/rows.txt
