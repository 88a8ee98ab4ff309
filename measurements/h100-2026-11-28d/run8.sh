#!/usr/bin/env bash
# Call 8 (2026-11-28d): the CNN model rows of issue 28's figure with the Vulkan conv rule
# of this session: ResNet-50 (batch 1 and 8), Inception-v3 and MobileNetV2, f32 and f16,
# on CUDA and Vulkan by the rule (no records), in one `weft report` call. No PyTorch
# this time (the device budget): the rows against torch.compile stay those of the H100.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
rm -rf .dev/bin; tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
mkdir -p /tmp/r/report && cp docs/report.json /tmp/r/report/
timeout 270 .dev/bin/weft report --no-compile --no-run --out /tmp/r/report \
  --models zoo:resnet50,zoo:resnet50@8,zoo:inception_v3,zoo:mobilenet_v2 \
  --model-targets cuda,vulkan --model-dtypes f32,f16 --model-iters 20 2>&1 | tail -3
echo "report rc=$? at $(( $(date +%s) - start )) s"
cp /tmp/r/report/report.json $OUT/report.json; cp /tmp/r/report/results.md $OUT/results.md
grep -E "^\| zoo:(resnet|incep|mobile)" $OUT/results.md | grep H200
