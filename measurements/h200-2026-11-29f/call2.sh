#!/usr/bin/env bash
# Call 2 of 2026-11-29 (sixth session): the few-tile split rule (weft-c) against main (weft-a) on whole CNNs;
# the merged build (weft: rmsfold + hfuse + few-tile rule) on decode steps, --check on cuda, corpus rows vs ORT.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
A=.dev/bin/weft-a; C=.dev/bin/weft-c; W=.dev/bin/weft
python3 - > /tmp/export.txt 2>&1 <<'PY' &
import torch, torchvision
for name, size in (("densenet121", 224), ("googlenet", 224)):
    kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    m = getattr(torchvision.models, name)(**kw).eval()
    torch.onnx.export(m, (torch.randn(1, 3, size, size),), f"/tmp/{name}.onnx", opset_version=17, dynamo=False)
print("exported")
PY
# correctness first: the merged build's generation against the float64 reference
{
for dt in f32 f16; do for b in 1 3; do
  echo "== generate --check cuda $dt batch $b"
  timeout 90 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 --intermediate 512 --vocab 1000 \
    --target cuda --dtype $dt --prompt-tokens 40 --new-tokens 24 --batch $b --check 2>&1 | grep -E "check|differ" | head -4
done; done
} > $OUT/gen-check.txt 2>&1
cat $OUT/gen-check.txt
{
for round in 1 2; do for v in "$A|" "$W|" "$W|--disable-pass norm-fold" "$W|--disable-pass horizontal"; do
  echo "== $v (round $round)"
  timeout 60 ${v%%|*} model generate zoo:llama --layers 4 --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 16 --iters 30 ${v#*|} > /tmp/g.txt 2>&1
  grep -E "^decode step .*device" /tmp/g.txt
done; done
} > $OUT/ab4.txt 2>&1
cat $OUT/ab4.txt
echo "decode ab done $(( $(date +%s) - T0 )) s"
wait; tail -1 /tmp/export.txt
{
for m in /tmp/densenet121.onnx /tmp/googlenet.onnx zoo:resnet50 zoo:inception_v3; do
  for round in 1; do for w in $A $C; do
    echo "== $m $w (round $round)"
    timeout 60 $w model bench $m --dtype f16 --iters 20 2>&1 | grep -E "^cuda "
  done; done
done
} > $OUT/ab-cnn.txt 2>&1
cat $OUT/ab-cnn.txt
echo "cnn ab done $(( $(date +%s) - T0 )) s"
timeout 150 python3 scripts/corpus.py --weft $W --targets cuda:f32,cuda:f16 --models tv_densenet121 \
  --jobs 16 --weft-timeout 100 --json /tmp/corpus.json --doc $OUT/corpus.md > $OUT/corpus-log.txt 2>&1
echo "corpus exit $? $(( $(date +%s) - T0 )) s"; grep -E "^\| (cuda|tv_)" $OUT/corpus.md | head -20
timeout 100 $C model bench /tmp/densenet121.onnx --dtype f16 --iters 20 > $OUT/bench-densenet-f16-c.txt 2>&1
timeout 200 $W model generate zoo:llama --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 64 --iters 20 --kernels > $OUT/gen22.txt 2>&1
echo "gen22 exit $? $(( $(date +%s) - T0 )) s"; sed -n 3,9p $OUT/gen22.txt
