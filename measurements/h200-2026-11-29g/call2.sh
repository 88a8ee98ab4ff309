#!/usr/bin/env bash
# Call 2 of 2026-11-29 (seventh session): splitsem with the last part's sum loading 8 passes before storing
# (call 1: the one-kernel split form was slower), A/B with WEFT_SPLIT_LAST; then the corpus against ONNX
# Runtime on cuda f16/f32 with the defaults (split-last, horizontal fusion, norm fold), both exporters.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
$W --version > $OUT/version2.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
python3 - > /tmp/export.txt 2>&1 <<'PY' &
import torch, torchvision
for name in ("densenet121", "googlenet"):
    kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    m = getattr(torchvision.models, name)(**kw).eval()
    torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), f"/tmp/{name}.onnx", opset_version=17, dynamo=False)
print("exported")
PY
wait; tail -1 /tmp/export.txt
{
for m in /tmp/densenet121.onnx zoo:resnet50 zoo:inception_v3 /tmp/googlenet.onnx /tmp/densenet121.onnx; do
  for env in "WEFT_SPLIT_LAST=0" "WEFT_SPLIT_LAST=1"; do
    echo "== $m $env"
    env $env timeout 60 $W model bench $m --dtype f16 --iters 20 --no-kernels 2>&1 | grep -E "^cuda "
  done
done
} > $OUT/ab-cnn2.txt 2>&1
cat $OUT/ab-cnn2.txt; echo "cnn ab done $(( $(date +%s) - T0 )) s"
timeout 100 $W model bench /tmp/densenet121.onnx --dtype f16 --iters 20 > $OUT/bench-densenet-f16-2.txt 2>&1
echo "bench done $(( $(date +%s) - T0 )) s"
timeout 330 python3 scripts/corpus.py --weft $W --targets cuda:f32,cuda:f16 \
  --models tv_densenet121,tv_resnet50,tv_inception_v3,tv_googlenet,tv_efficientnet_b0,tv_regnet_y_400mf,tv_convnext_tiny,tv_mobilenet_v2,tv_shufflenet_v2_x0_5,hf_bert,hf_distilbert,hf_gpt2,hf_t5_encoder,hf_llama,hf_qwen2 \
  --jobs 16 --weft-timeout 120 --json $OUT/corpus.json --doc $OUT/corpus.md > /tmp/corpus-log.txt 2>&1
echo "corpus exit $? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus.json ] || cp $OUT/corpus.json.partial $OUT/corpus-partial.json 2>/dev/null
grep -v Warning /tmp/corpus-log.txt | tail -8 | cut -c1-300
grep -E "^\| " $OUT/corpus.md | grep -vi " right " | head -30 | cut -c1-300
