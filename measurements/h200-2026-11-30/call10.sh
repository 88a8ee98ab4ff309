#!/usr/bin/env bash
# Call 10 (tenth session): measurements/next's `batch8` — per-kernel tables at batch 8 of the four
# models below torch.compile (ConvNeXt-tiny, ResNet-50, Inception-v3, Llama-shaped), then the fp16
# implicit GEMM's Hopper tiles over gathered views (wg=1) at ResNet-50's batch-8 3x3s beside cuDNN.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
mkdir -p /tmp/o
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > /tmp/o/version10.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 8 --jobs 4 \
  --models convnext_tiny,resnet50,inception_v3,llama_shaped --json /tmp/o/b8-export.json > /tmp/o/b8-export.txt 2>&1
echo "export rc=$? $(( $(date +%s) - T0 )) s"
for m in convnext_tiny resnet50 inception_v3 llama_shaped; do
  timeout 60 $W model bench /tmp/weft-speed/$m/model.onnx --targets cuda --dtype f16 --iters 20 > /tmp/o/bench8-$m.txt 2>&1
  echo "$m rc=$? $(( $(date +%s) - T0 )) s"; grep -E '^cuda' /tmp/o/bench8-$m.txt | head -2
done
timeout 240 $W sweep --op conv2d-f16 --target cuda --only wg=1 --sample 24 --budget-ms 4 \
  --shapes "n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1;n=8,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1;n=8,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1" \
  --json /tmp/o/conv-b8-wg.json > /tmp/o/conv-b8-wg.txt 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"
tail -30 /tmp/o/conv-b8-wg.txt
tar czf $OUT/call10.tgz -C /tmp o
echo "done $(( $(date +%s) - T0 )) s"
