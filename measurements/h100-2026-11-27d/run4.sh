#!/usr/bin/env bash
# 2026-11-27d, call 4: torchvision's ResNet-50, Inception v3 and MobileNet v2 (exported to
# ONNX by PyTorch) run by weft with the untested-load fp32 kernels on CUDA and on Vulkan,
# against PyTorch's own output (fp32, TF32 off) on the same input.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
for t in cuda vulkan; do
  timeout 200 python3 scripts/torchvision_check.py --weft .dev/bin/weft --target $t 2>&1 | grep -E '^\{|rror' 
  echo "$t rc=$? at $(( $(date +%s) - start )) s"
done | tee $OUT/torchvision.txt
