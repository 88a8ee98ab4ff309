#!/usr/bin/env bash
# Call 5 (twenty-first session): why whole products help GoogLeNet and hurt
# Inception-v3 on Vulkan at batch 1 (call 4: WEFT_SPLIT_BESIDE=next:1152 GoogLeNet
# 617 -> 477 us, Inception-v3 1.03 -> 1.26 ms): per-kernel tables (`weft model bench
# --targets vulkan --dtype f16`) of Inception-v3 under 0 and next:1152, GoogLeNet under
# next:1152 (its table under the rule is call 1's).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 --models inception_v3,googlenet --json /tmp/b1.json > /tmp/e1.txt 2>&1
echo "exported $(( $(date +%s) - T0 )) s" > $OUT/runs.txt
WEFT_SPLIT_BESIDE=0 timeout 80 $W model bench /tmp/ws1/inception_v3/model.onnx --targets vulkan --dtype f16 > $OUT/bench1-inception_v3-0.txt 2>&1
echo "bench 1 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
WEFT_SPLIT_BESIDE=next:1152 timeout 80 $W model bench /tmp/ws1/inception_v3/model.onnx --targets vulkan --dtype f16 > $OUT/bench1-inception_v3-next1152.txt 2>&1
echo "bench 2 $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
WEFT_SPLIT_BESIDE=next:1152 timeout 60 $W model bench /tmp/ws1/googlenet/model.onnx --targets vulkan --dtype f16 > $OUT/bench1-googlenet-next1152.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
