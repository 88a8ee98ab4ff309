#!/usr/bin/env bash
# Call 1 of 2026-11-29 (fifth session): CUDA correctness of the new CNN schedules (corpus vs ORT/PyTorch),
# gemv trials at TinyLlama's decode products, small zoo:llama generate --check on cuda.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
W=.dev/bin/weft
{
for dt in f32 f16; do
  echo "== generate --check cuda $dt"
  timeout 60 $W model generate zoo:llama --layers 2 --hidden 64 --heads 4 --kv-heads 2 --intermediate 128 --vocab 300 \
    --target cuda --dtype $dt --prompt-tokens 6 --new-tokens 10 --check 2>&1 | tail -6
  timeout 90 $W model generate zoo:llama --layers 3 --hidden 256 --heads 8 --kv-heads 2 --intermediate 512 --vocab 1000 \
    --target cuda --dtype $dt --prompt-tokens 40 --new-tokens 24 --batch 3 --check 2>&1 | tail -6
done
} > $OUT/gen-check.txt 2>&1
timeout 260 python3 scripts/corpus.py --weft $W --targets cuda:f32,cuda:f16 \
  --models tv_densenet121,tv_regnet_y_400mf,tv_convnext_tiny,tv_efficientnet_b0,timm_regnetx_002,timm_convnext_atto,timm_ghostnet_100,tv_mobilenet_v2 \
  --jobs 16 --weft-timeout 150 --json /tmp/corpus.json --doc $OUT/corpus.md > $OUT/corpus-log.txt 2>&1
echo "corpus exit $?"
tail -30 $OUT/corpus-log.txt
echo "wall $(( $(date +%s) - T0 )) s"
timeout 150 $W sweep --op gemv-f16 --shapes llama-decode --target cuda --sample 64 --budget-ms 10 --trials --json $OUT/gemv-f16.json > $OUT/gemv-f16.txt 2>&1
echo "sweep exit $?"; tail -14 $OUT/gemv-f16.txt
echo "wall $(( $(date +%s) - T0 )) s"
