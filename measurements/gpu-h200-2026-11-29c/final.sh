#!/usr/bin/env bash
# Session 3 of 2026-11-29: the merged binary on the GPU: index guards on cuda/vulkan,
# weft model check on cuda, the hf-decoder corpus family (Phi-3 now imports), llama check.
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > $OUT/pip.txt 2>&1
W=.dev/bin/weft
python3 .dev/idx_model.py /tmp/idx > $OUT/idx.txt 2>&1
for t in cuda vulkan; do
  for case in ok bad; do
    timeout 60 $W model run /tmp/idx/model.onnx --target $t --inputs /tmp/idx/$case > $OUT/idx-$t-$case.txt 2>&1
    echo "idx $t $case exit $?" | tee -a $OUT/idx.txt
    grep -iE "error|range|index" $OUT/idx-$t-$case.txt | head -3 | tee -a $OUT/idx.txt
  done
done
timeout ${LIMIT:-330} python3 scripts/corpus.py --weft $W --targets cuda:f32,cuda:f16,vulkan:f16 \
  --models hf-decoder,tv_resnet18 --jobs 16 --weft-timeout 120 --keep --work /tmp/corp \
  --json $OUT/corpus-dec.json --doc $OUT/corpus-dec.md > $OUT/log-dec.txt 2>&1
echo "corpus exit $?"; tail -12 $OUT/log-dec.txt | grep -v Warn
for f in /tmp/corp/hf_phi3/torchscript17 /tmp/corp/tv_resnet18/dynamo18; do
  for d in f32 f16; do
    timeout 120 $W model check $f.onnx --target cuda --dtype $d --inputs $f-in > $OUT/check-$(basename $(dirname $f))-$d.txt 2>&1
    echo "check $f cuda $d exit $?"; tail -3 $OUT/check-$(basename $(dirname $f))-$d.txt
  done
done
if [ -f scripts/llama_check.py ]; then
  timeout 150 python3 scripts/llama_check.py --weft $W --target cuda > $OUT/llama.txt 2>&1; echo "llama exit $?"; tail -8 $OUT/llama.txt
fi
