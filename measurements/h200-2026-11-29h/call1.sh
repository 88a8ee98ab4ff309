#!/usr/bin/env bash
# Call 1 of 2026-11-29 (eighth session): issue 59's weft columns at batch 1 (cuda/vulkan ×
# f16/f32, 15 models), the CNNs' per-kernel tables on cuda and vulkan (where Vulkan's time goes),
# and the zoo side of the zoo-against-export check. Main at the commit in version.txt.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version.txt
LIMIT=420 bash scripts/device-run.sh corpus weft 1
echo "corpus done $(( $(date +%s) - T0 )) s"
mkdir -p /tmp/bench
for m in googlenet mobilenet_v2 shufflenet_v2 densenet121 resnet50 regnet_y_400mf; do
  [ $(( $(date +%s) - T0 )) -gt 470 ] && break
  timeout 40 $W model bench /tmp/weft-speed/$m/model.onnx --targets cuda,vulkan --dtype f16 --iters 20 > /tmp/bench/bench-$m.txt 2>&1
  echo "bench $m rc=$? $(( $(date +%s) - T0 )) s"; grep -E "^(cuda|vulkan) " /tmp/bench/bench-$m.txt
done
tar czf $OUT/bench.tgz -C /tmp bench
left=$(( 575 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && LIMIT=$left bash scripts/device-run.sh corpus zoo
echo "done $(( $(date +%s) - T0 )) s"
