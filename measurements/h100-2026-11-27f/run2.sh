#!/usr/bin/env bash
# 2026-11-27f, call 2. Binaries: .dev/bin/weft = main with the fp32 refit and the early
# release of one-wave grids (a kernel whose grid is no larger than the multiprocessors
# runs griddepcontrol.launch_dependents right after its wait); .dev/bin/weft-late = the
# same without the early release (every kernel's dependents launch at its blocks' exit).
# (1) GPU checks of the new binary (workloads CUDA+Vulkan vs float64, hand-built kernels,
# models vs ONNX Runtime); (2) whole models on CUDA, late/early alternating twice;
# (3) torchvision's models exported to ONNX, weft vs PyTorch on CUDA.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
{
for t in .dev/checks/handmade-* .dev/checks/workloads-* .dev/checks/models-*; do
  echo "== $t"
  WEFT_REQUIRE=cuda,vulkan timeout 170 "$t" --test-threads=1 2>&1 | tail -n 6
  echo "exit ${PIPESTATUS[0]} at $(( $(date +%s) - start )) s"
done
} > $OUT/checks-early.txt 2>&1
grep -E "^(==|exit|test result)" $OUT/checks-early.txt
{
for m in "zoo:resnet50" "zoo:resnet50 --dtype f16" "zoo:resnet50 --dtype f16 --batch 8" "zoo:inception_v3 --dtype f16" "zoo:mobilenet_v2 --dtype f16" "zoo:bert_base --dtype f16" "zoo:gpt2 --dtype f16" "zoo:gpt2 --dtype f16 --seq 512" "zoo:gpt2 --dtype f16 --batch 8"; do
  for b in weft-late weft weft-late weft; do
    echo "$m $b: $(timeout 40 .dev/bin/$b model run $m --target cuda 2>&1 | grep -E '^(median|error)' | tr '\n' ' ')"
  done
done
} > $OUT/models-early.txt 2>&1; cat $OUT/models-early.txt
echo "models done at $(( $(date +%s) - start )) s"
timeout 150 python3 scripts/torchvision_check.py --weft .dev/bin/weft --target cuda > $OUT/torchvision.jsonl 2> $OUT/torchvision.err
echo "torchvision rc=$? at $(( $(date +%s) - start )) s"; cat $OUT/torchvision.jsonl; tail -3 $OUT/torchvision.err
