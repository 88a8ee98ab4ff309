#!/usr/bin/env bash
# Call 4: A/B of the f16 depthwise template over views against the direct rule (WEFT_AB_DW_DIRECT=1, a test build only).
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
( python3 -c "
import torch,torchvision
m=torchvision.models.efficientnet_b0().eval()
torch.onnx.export(m, torch.randn(1,3,224,224), '/tmp/eff.onnx', opset_version=17, dynamo=False)" > /tmp/exp.txt 2>&1 ) &
W=.dev/bin/weft-ab
for v in "" 1; do env ${v:+WEFT_AB_DW_DIRECT=1} timeout 40 $W model bench zoo:mobilenet_v2 --dtype f16 --iters 20 > $OUT/mnv2-f16-direct$v.txt 2>&1; done
wait
for v in "" 1; do env ${v:+WEFT_AB_DW_DIRECT=1} timeout 40 $W model bench /tmp/eff.onnx --dtype f16 --iters 20 > $OUT/eff-f16-direct$v.txt 2>&1; done
timeout 30 $W model bench /tmp/eff.onnx --dtype f32 --iters 20 --no-kernels > $OUT/eff-f32.txt 2>&1
for f in $OUT/*.txt; do echo "$f: $(grep -E '^cuda ' $f)"; done
