#!/usr/bin/env bash
# Call 4 (fourteenth session; what was left of the device time, ~400 s): `vkconv` of measurements/next, cut to one
# round — issue 59's small Vulkan convolutions with WEFT_VK_CONV=0/1/2, batch 1 f16, four models, beside CUDA.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 TIMEOUT=150 bash scripts/device-run.sh run vkconv-export python3 scripts/speed.py --dry-run --no-torch \
  --batch 1 --models googlenet,mobilenet_v2,shufflenet_v2,densenet121 --json $OUT/vkconv-export.json > /tmp/export.txt 2>&1
echo "export $(( $(date +%s) - T0 )) s" | tee -a $OUT/rows.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
for m in googlenet mobilenet_v2 shufflenet_v2 densenet121; do
  for v in 0 1 2; do
    t=vulkan; [ $v = 0 ] && t=cuda,vulkan
    echo "== WEFT_VK_CONV=$v $m" | tee -a $OUT/rows.txt
    WEFT_VK_CONV=$v timeout 60 .dev/bin/weft model bench /tmp/weft-speed/$m/model.onnx --targets $t --dtype f16 \
      --no-kernels 2>&1 | grep -E "^(target|cuda|vulkan)" | tee -a $OUT/rows.txt
  done
  echo "t $(( $(date +%s) - T0 )) s" | tee -a $OUT/rows.txt
done
