#!/usr/bin/env bash
# Call 1 of 2026-11-29 (sixth session): f16 split-KV --check on cuda; DenseNet-121 per-kernel table after
# concat in place; gemv 32-byte segments for few-block products (weft-b) against main (weft-a) on whole decode steps.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
A=.dev/bin/weft-a; B=.dev/bin/weft-b
python3 - > /tmp/export.txt 2>&1 <<'PY' &
import torch, torchvision
m = torchvision.models.densenet121().eval()
torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), "/tmp/dn.onnx", opset_version=17, dynamo=False)
print("exported")
PY
{
for dt in f32 f16; do for b in 1 3; do
  echo "== generate --check cuda $dt batch $b"
  timeout 90 $B model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 --intermediate 512 --vocab 1000 \
    --target cuda --dtype $dt --prompt-tokens 40 --new-tokens 24 --batch $b --check 2>&1 | grep -E "attention|split|ids|equal|differ|check" | head -8
done; done
} > $OUT/gen-check.txt 2>&1
echo "check done $(( $(date +%s) - T0 )) s"
{
for round in 1 2; do for w in $A $B; do
  echo "== $w (round $round)"
  timeout 60 $w model generate zoo:llama --layers 4 --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 16 --iters 30 > /tmp/g.txt 2>&1
  grep -E "^decode step .*device" /tmp/g.txt
done; done
} > $OUT/ab4.txt 2>&1
cat $OUT/ab4.txt
echo "ab done $(( $(date +%s) - T0 )) s"
wait
cat /tmp/export.txt | tail -2
timeout 120 $A model bench /tmp/dn.onnx --dtype f16 --iters 20 > $OUT/bench-densenet-f16.txt 2>&1
echo "bench exit $? $(( $(date +%s) - T0 )) s"; grep -iE "median|kernels" $OUT/bench-densenet-f16.txt | head -5
timeout 200 $B model generate zoo:llama --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 64 --iters 20 --kernels > $OUT/gen22-b.txt 2>&1
echo "gen22 exit $? $(( $(date +%s) - T0 )) s"; sed -n 3,9p $OUT/gen22-b.txt
