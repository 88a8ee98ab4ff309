#!/usr/bin/env bash
# 2026-11-29 call 1: the restructured weft (issue 56) against the baseline binary on the GPU,
# and against PyTorch.
set -u
export OUT=${OUT:?}
bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
AB="weft-base,weft,weft-base,weft"
S=$(date +%s)
for td in "cuda f16" "vulkan f16" "cuda f32"; do
  set -- $td
  for m in resnet50 mobilenet_v2; do
    bash scripts/device-run.sh ab ab $AB model run zoo:$m --target $1 --dtype $2 --iters 50 --no-check >/dev/null 2>&1
  done
  for m in bert_base gpt2; do
    bash scripts/device-run.sh ab ab $AB model run zoo:$m --target $1 --dtype $2 --seq 128 --iters 50 --no-check >/dev/null 2>&1
  done
done
echo "ab $(( $(date +%s) - S )) s"
timeout 150 python3 scripts/torchvision_check.py --weft .dev/bin/weft --target cuda --models resnet50,mobilenet_v2 > $OUT/tv-cuda.txt 2>&1
echo "tv $(( $(date +%s) - S )) s"
WEFT=.dev/bin/weft MODELS="bert_base gpt2" SHAPES="1x128" DTYPES="f16" TARGETS="cuda vulkan" timeout 220 bash scripts/torch_check.sh > $OUT/torch-check.txt 2>&1
echo "tc $(( $(date +%s) - S )) s"
tail -3 $OUT/tv-cuda.txt $OUT/torch-check.txt
cat $OUT/ab.txt | cut -c1-200
