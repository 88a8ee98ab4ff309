#!/usr/bin/env bash
# Call 5 of 2026-11-29 (seventh session): main with the staged rule, the one-kernel split-KV attention
# (attncombine), silu·up in the down product's loads (prologue) and one prefill for a range (prefillsym).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
$W --version > $OUT/version5.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
python3 - > /tmp/export.txt 2>&1 <<'PY' &
import torch, torchvision
m = torchvision.models.densenet121().eval()
torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), "/tmp/densenet121.onnx", opset_version=17, dynamo=False)
print("exported")
PY
TINY="--layers 3 --hidden 256 --heads 8 --kv-heads 2 --intermediate 512 --vocab 1000"
{
for dt in f32 f16; do for b in 1 3; do
  echo "== generate --check cuda $dt batch $b"
  timeout 90 $W model generate zoo:llama $TINY --target cuda --dtype $dt --prompt-tokens 40 --new-tokens 24 --batch $b --check 2>&1 | grep -E "check|differ|error|prefill (compiled|bounded)" | head -4
done; done
echo "== generate --check cuda f16 prompt 7 of 1..=64"
timeout 90 $W model generate zoo:llama $TINY --target cuda --dtype f16 --prompt-tokens 7 --max-prompt 64 --new-tokens 24 --check 2>&1 | grep -E "check|differ|error|prefill (compiled|bounded)" | head -4
} > $OUT/gen-check5.txt 2>&1
cat $OUT/gen-check5.txt; echo "check done $(( $(date +%s) - T0 )) s"
timeout 150 python3 scripts/corpus.py --weft $W --targets cuda:f32,cuda:f16 \
  --models tv_densenet121,tv_efficientnet_b0,tv_convnext_tiny,tv_mobilenet_v3_small,hf_bert,hf_gpt2,hf_llama,hf_qwen2,hf_mistral,hf_t5_encoder \
  --jobs 16 --weft-timeout 100 --json $OUT/corpus5.json --doc $OUT/corpus5.md > /tmp/corpus-log.txt 2>&1
echo "corpus exit $? $(( $(date +%s) - T0 )) s"; grep -v Warning /tmp/corpus-log.txt | tail -3 | cut -c1-300
{
for round in 1 2; do for v in "|" "|--disable-pass skinny-prologue" "WEFT_ATTN_COMBINE=0|"; do
  echo "== $v (round $round)"
  env ${v%%|*} timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 16 --iters 30 ${v#*|} > /tmp/g.txt 2>&1
  grep -E "^decode step .*device" /tmp/g.txt
done; done
} > $OUT/ab4-decode.txt 2>&1
cat $OUT/ab4-decode.txt; echo "decode ab done $(( $(date +%s) - T0 )) s"
timeout 120 $W model generate zoo:llama --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 64 --iters 20 --kernels > $OUT/gen22-5.txt 2>&1
echo "gen22 exit $? $(( $(date +%s) - T0 )) s"; sed -n 2,9p $OUT/gen22-5.txt
wait; tail -1 /tmp/export.txt
{
for t in "cuda f32" "vulkan f16"; do for d in "" "--disable-pass staged-prologue"; do
  set -- $t
  echo "== densenet $1 $2 $d"
  timeout 60 $W model bench /tmp/densenet121.onnx --targets $1 --dtype $2 --iters 20 --no-kernels $d 2>&1 | grep -E "^(cuda|vulkan) "
done; done
} > $OUT/ab-staged.txt 2>&1
cat $OUT/ab-staged.txt; echo "staged ab done $(( $(date +%s) - T0 )) s"
{
for pm in "16 512" "128 512" "512 512" "128 128"; do
  set -- $pm
  echo "== prefill prompt $1 max $2"
  timeout 70 $W model generate zoo:llama --target cuda --dtype f16 --prompt-tokens $1 --max-prompt $2 --new-tokens 4 --iters 5 2>&1 | grep -E "^prefill|^decode step .*device"
done
} > $OUT/prefill5.txt 2>&1
cat $OUT/prefill5.txt; echo "done $(( $(date +%s) - T0 )) s"
