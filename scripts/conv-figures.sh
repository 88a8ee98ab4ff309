#!/usr/bin/env bash
# The GPU figures of the convolution family (docs/results-history.md), in one run on the GPU
# machine: cuDNN and PyTorch references, then weft's tuner on each shape and target.
#   bash scripts/conv-figures.sh PART OUT   (PART: cuda | vulkan | fused | sanitizer)
set -u
part=$1; out=$2; weft=${WEFT:-.dev/bin/weft}
export WEFT_RECORDS=$out/records.json
conv=(n=1,c=64,h=224,w=224,k=64 n=1,c=128,h=122,w=122,k=128 n=1,c=128,h=128,w=128,k=128
      n=1,c=64,h=56,w=56,k=64 n=1,c=64,h=64,w=64,k=32 n=1,c=64,h=112,w=112,k=128)
dw=(b=3,c=4,h=16,w=32,k=7 b=1,c=32,h=112,w=112,k=3 b=1,c=144,h=56,w=56,k=3
    b=1,c=192,h=28,w=28,k=3 b=1,c=384,h=14,w=14,k=3 b=1,c=960,h=7,w=7,k=3
    b=8,c=144,h=56,w=56,k=3 b=1,c=144,h=56,w=56,k=3,stride=2 b=1,c=192,h=28,w=28,k=3,stride=2)
case $part in
cuda)
  python3 scripts/conv2d-cudnn-reference.py > $out/cudnn.txt 2>&1
  python3 scripts/depthwise-pytorch-reference.py > $out/pytorch-depthwise.txt 2>&1
  for s in "${conv[@]}"; do
    for op in winograd-conv2d conv2d; do echo "== $op $s"; $weft tune --op $op --shape $s --target cuda 2>&1 | grep -v '^\s*$' | head -12; done
  done > $out/tune-conv-cuda.txt
  for s in "${dw[@]}"; do echo "== depthwise $s"; $weft tune --op depthwise-conv2d --shape $s --target cuda 2>&1 | head -12; done > $out/tune-depthwise-cuda.txt
  ;;
vulkan)
  for s in "${conv[@]}"; do
    for op in ${VULKAN_OPS:-winograd-conv2d conv2d}; do echo "== $op $s"; $weft tune --op $op --shape $s --target vulkan 2>&1 | grep -v '^\s*$' | head -12; done
  done > $out/tune-conv-vulkan.txt
  ;;
fused)
  # Conv-BN-ReLU fused (one kernel) against the same tuned GEMM with bias-ReLU as a
  # second kernel (`fuse=0`), both with the tuned config of conv2d-bias-relu.
  for s in "${conv[@]}"; do
    echo "== conv2d-bias-relu $s"
    cfg=$($weft tune --op conv2d-bias-relu --shape $s --target cuda 2>&1 | awk '/^best /{print $2}')
    echo "tuned: $cfg"
    $weft run --op conv2d-bias-relu --shape $s --target cuda --config "$cfg" 2>&1 | tail -2
    $weft run --op conv2d-bias-relu --shape $s --target cuda --config "$cfg,fuse=0" 2>&1 | tail -2
  done > $out/fused-vs-unfused-cuda.txt
  ;;
sanitizer)
  # Odd shapes (the issue's), default and tuned configs, memcheck and racecheck.
  cs=compute-sanitizer
  for tool in memcheck racecheck; do
    for run in "--op winograd-conv2d --shape n=1,c=8,h=13,w=11,k=4" \
               "--op winograd-conv2d --shape n=1,c=128,h=122,w=122,k=128" \
               "--op conv2d --shape n=2,c=3,h=17,w=19,k=5,stride=2,pad=1" \
               "--op conv2d-bias-relu --shape n=2,c=3,h=17,w=19,k=5,stride=2,pad=1 --config fuse=0" \
               "--op depthwise-conv2d --shape b=2,c=3,h=13,w=9,k=3,stride=2" \
               "--op depthwise-conv2d --shape b=1,c=5,h=7,w=7,k=5 --config th=8,tw=16,vh=1,vw=4,cb=8,smem=1,ur=0" \
               "--op depthwise-conv2d --shape b=1,c=5,h=7,w=7,k=5 --config th=8,tw=8,vh=1,vw=2,cb=4,smem=0,ur=1"; do
      echo "== $tool $run"; $cs --tool $tool --print-limit 5 $weft run $run --target cuda --iters 1 2>&1 | tail -3
    done
  done > $out/sanitizer.txt
  ;;
ncu)
  # weft's tuned depthwise kernels timed by ncu (CUPTI kernel duration, warm caches, clocks
  # as they are): the same measure as the PyTorch reference, without graph-node gaps.
  # Uses the records of the `cuda` part (WEFT_RECORDS=$RECORDS).
  export WEFT_RECORDS=${RECORDS:-$out/records.json}
  for s in "${dw[@]}"; do
    echo "== depthwise $s"
    ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
        --launch-skip 3 --launch-count 5 $weft run --op depthwise-conv2d --shape $s --target cuda --iters 10 2>&1 \
      | grep gpu__time_duration | awk -F'","' '{print $NF}' | tr -d '"' | tr '\n' ' '; echo
  done > $out/ncu-depthwise-cuda.txt
  for s in "${conv[@]}"; do
    echo "== winograd-conv2d $s"
    ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
        --launch-skip 8 --launch-count 8 $weft run --op winograd-conv2d --shape $s --target cuda --iters 10 2>&1 \
      | grep gpu__time_duration | awk -F'","' '{print $(NF-3), $NF}' | tr -d '"' | tr '\n' ';'; echo
  done > $out/ncu-winograd-cuda.txt
  ;;
esac
