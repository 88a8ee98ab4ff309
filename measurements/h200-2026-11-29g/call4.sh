#!/usr/bin/env bash
# Call 4 of 2026-11-29 (seventh session): branch probound (main + WEFT_PROLOGUE_BOUND, an experiment):
# every computing prologue chain a kernel of its own (bound 0) against the rule's bound (64), fp16 batch 1.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
$W --version > $OUT/version4.txt
python3 - > /tmp/export.txt 2>&1 <<'PY'
import torch, torchvision
from concurrent.futures import ProcessPoolExecutor
def ex(name):
    if name == "densenet121_b8":
        m = torchvision.models.densenet121().eval()
        torch.onnx.export(m, (torch.randn(8, 3, 224, 224),), "/tmp/densenet121_b8.onnx", opset_version=17, dynamo=False)
        return name
    kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    m = getattr(torchvision.models, name)(**kw).eval()
    torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), f"/tmp/{name}.onnx", opset_version=17, dynamo=False)
    return name
with ProcessPoolExecutor(4) as p:
    print(list(p.map(ex, ["densenet121", "googlenet", "efficientnet_b0", "convnext_tiny", "densenet121_b8"])))
PY
tail -1 /tmp/export.txt; echo "exported $(( $(date +%s) - T0 )) s"
{
for m in /tmp/densenet121.onnx /tmp/googlenet.onnx /tmp/efficientnet_b0.onnx /tmp/convnext_tiny.onnx zoo:resnet50 zoo:inception_v3 /tmp/densenet121.onnx; do
  for env in "WEFT_PROLOGUE_BOUND=64" "WEFT_PROLOGUE_BOUND=0"; do
    echo "== $m $env"
    env $env timeout 60 $W model bench $m --dtype f16 --iters 20 --no-kernels 2>&1 | grep -E "^cuda "
  done
done
} > $OUT/ab-bound.txt 2>&1
cat $OUT/ab-bound.txt; echo "ab done $(( $(date +%s) - T0 )) s"
WEFT_PROLOGUE_BOUND=0 timeout 100 $W model bench /tmp/densenet121.onnx --dtype f16 --iters 20 > $OUT/bench-densenet-f16-bound0.txt 2>&1
WEFT_PROLOGUE_BOUND=0 timeout 100 $W model bench /tmp/densenet121_b8.onnx --dtype f16 --iters 20 > $OUT/bench-densenet-f16-b8-bound0.txt 2>&1
timeout 100 $W model bench /tmp/densenet121_b8.onnx --dtype f16 --iters 20 --no-kernels 2>&1 | grep -E "^cuda " > $OUT/densenet-b8.txt
grep -E "^cuda " $OUT/bench-densenet-f16-b8-bound0.txt >> $OUT/densenet-b8.txt; cat $OUT/densenet-b8.txt
echo "done $(( $(date +%s) - T0 )) s"
