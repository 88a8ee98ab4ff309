#!/usr/bin/env bash
# Call 1 of 2026-11-29 (seventh session): branch splitsem (de8582f) timed against its own knobs on the H200:
# WEFT_SPLIT_LAST=0 keeps split-K's summing kernels, WEFT_GEMV_SPLIT=0 keeps the skinny products whole.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
$W --version > $OUT/version.txt
python3 - > /tmp/export.txt 2>&1 <<'PY' &
import torch, torchvision
for name in ("densenet121", "googlenet"):
    kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    m = getattr(torchvision.models, name)(**kw).eval()
    torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), f"/tmp/{name}.onnx", opset_version=17, dynamo=False)
print("exported")
PY
# correctness first: generation against the float64 reference, split-last and gemv split on (the defaults), then forced off
{
for env in "" "WEFT_GEMV_SPLIT=4"; do for dt in f32 f16; do for b in 1 3; do
  echo "== generate --check cuda $dt batch $b $env"
  env $env timeout 90 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 --intermediate 512 --vocab 1000 \
    --target cuda --dtype $dt --prompt-tokens 40 --new-tokens 24 --batch $b --check 2>&1 | grep -E "check|differ|error" | head -4
done; done; done
} > $OUT/gen-check.txt 2>&1
cat $OUT/gen-check.txt; echo "check done $(( $(date +%s) - T0 )) s"
{
for round in 1 2 3; do for env in "WEFT_GEMV_SPLIT=0" "WEFT_GEMV_ON=1"; do
  echo "== $env (round $round)"
  env $env timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 16 --iters 30 > /tmp/g.txt 2>&1
  grep -E "^decode step .*device" /tmp/g.txt
done; done
} > $OUT/ab4-gemv.txt 2>&1
cat $OUT/ab4-gemv.txt; echo "decode ab done $(( $(date +%s) - T0 )) s"
wait; tail -1 /tmp/export.txt
{
for m in /tmp/densenet121.onnx zoo:resnet50 zoo:inception_v3 zoo:bert_base /tmp/googlenet.onnx /tmp/densenet121.onnx zoo:resnet50; do
  for env in "WEFT_SPLIT_LAST=0" "WEFT_SPLIT_LAST=1"; do
    echo "== $m $env"
    env $env timeout 60 $W model bench $m --dtype f16 --iters 20 --no-kernels 2>&1 | grep -E "^cuda "
  done
done
} > $OUT/ab-cnn.txt 2>&1
cat $OUT/ab-cnn.txt; echo "cnn ab done $(( $(date +%s) - T0 )) s"
timeout 100 $W model bench /tmp/densenet121.onnx --dtype f16 --iters 20 > $OUT/bench-densenet-f16.txt 2>&1
timeout 150 $W model generate zoo:llama --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 64 --iters 20 --kernels > $OUT/gen22.txt 2>&1
echo "gen22 exit $? $(( $(date +%s) - T0 )) s"; sed -n 1,12p $OUT/gen22.txt
