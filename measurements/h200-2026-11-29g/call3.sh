#!/usr/bin/env bash
# Call 3 of 2026-11-29 (seventh session): splitsem 7c2dcfe (one fence a block, thread 0 after a barrier)
# A/B with WEFT_SPLIT_LAST on whole CNNs, then the gemv split forced by its rule for the record.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
$W --version > $OUT/version3.txt
python3 - > /tmp/export.txt 2>&1 <<'PY'
import torch, torchvision
m = torchvision.models.densenet121().eval()
torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), "/tmp/densenet121.onnx", opset_version=17, dynamo=False)
print("exported")
PY
tail -1 /tmp/export.txt
{
for m in /tmp/densenet121.onnx zoo:resnet50 zoo:inception_v3 /tmp/densenet121.onnx zoo:resnet50; do
  for env in "WEFT_SPLIT_LAST=0" "WEFT_SPLIT_LAST=1"; do
    echo "== $m $env"
    env $env timeout 60 $W model bench $m --dtype f16 --iters 20 --no-kernels 2>&1 | grep -E "^cuda "
  done
done
} > $OUT/ab-cnn3.txt 2>&1
cat $OUT/ab-cnn3.txt; echo "cnn ab done $(( $(date +%s) - T0 )) s"
WEFT_SPLIT_LAST=1 timeout 100 $W model bench /tmp/densenet121.onnx --dtype f16 --iters 20 > $OUT/bench-densenet-f16-3.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s"
