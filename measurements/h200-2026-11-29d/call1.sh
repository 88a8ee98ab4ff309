#!/usr/bin/env bash
# Call 1 of 2026-11-29 (fourth session): where issue 59's slow models stand now, and the decode proxy.
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > $OUT/pip.txt 2>&1
# decode proxy in the background of phase 1 (GPU mostly idle then): TinyLlama 22 layers, one token
( .dev/bin/weft model bench zoo:llama --seq 1 --dtype f16 --iters 20 > $OUT/llama-seq1-f16.txt 2>&1 ) &
timeout 370 python3 scripts/speed.py --weft .dev/bin/weft --jobs 8 --iters 30 --batch 1 \
  --models efficientnet_b0,resnext50_32x4d,convnext_tiny,t5_encoder,gpt2,distilbert,bert_base,llama_shaped \
  --weft-targets cuda:f16,cuda:f32,vulkan:f16 --json $OUT/speed.json --doc $OUT/speed.md > $OUT/log.txt 2>&1
echo "speed exit $?"
wait
grep -v Warning $OUT/log.txt | tail -12
for m in convnext_tiny resnext50_32x4d efficientnet_b0 bert_base llama_shaped; do
  [ -f /tmp/weft-speed/$m/model.onnx ] || continue
  timeout 30 .dev/bin/weft model bench /tmp/weft-speed/$m/model.onnx --dtype f16 --iters 10 > $OUT/bench-$m.txt 2>&1
done
tail -5 $OUT/llama-seq1-f16.txt
ls $OUT
