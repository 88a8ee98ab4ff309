#!/usr/bin/env bash
# 2026-11-28c call 3: the Vulkan rule's fp16 tiles compiled by both compilers. The same
# config (register staging, one k sub-step of 16 a tile, fb = 1 and 2) through CUDA
# (NVRTC, mma.sync + ldmatrix) and through WGSL on Vulkan, at three shapes; CUDA's own
# rule (wgmma) beside. Then Nsight Compute on the CUDA build of the 128x256x16 tile at
# 1024 x 3072 x 768: where its warps stall (the Vulkan kernel cannot be profiled; its
# SASS, read from the driver's shader cache, has the same loop).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
C=g=8,vec=4,cp=0,st=2,cc=0,wg=0
{
for sc in "m=1024,n=3072,k=768 mma=16,wm=2,wn=4,fm=4,fn=4,bk=16" "m=512,n=2304,k=768 mma=16,wm=4,wn=4,fm=2,fn=2,bk=16" \
          "m=4096,n=4096,k=4096 mma=16,wm=2,wn=4,fm=4,fn=4,bk=16"; do
  set -- $sc
  for t in cuda vulkan; do
    for fb in 1 2; do
      r=$(timeout 60 $W run --op matmul-f16 --shape $1 --target $t --config $2,$C,fb=$fb --iters 50 2>&1 | grep -E "^median|^error|^weft:" | cut -c1-80 | tr '\n' ' ')
      echo "$1 $t fb=$fb: $r"
    done
  done
  r=$(timeout 60 $W run --op matmul-f16 --shape $1 --target cuda --iters 50 2>&1 | grep -E "^config|^median" | cut -c1-100 | tr '\n' ' ')
  echo "$1 cuda rule: $r"
done
} 2>&1 | tee $OUT/same-config.txt
K="--op matmul-f16 --shape m=1024,n=3072,k=768 --target cuda --config mma=16,wm=2,wn=4,fm=4,fn=4,bk=16,$C,fb=1 --iters 3"
timeout 200 ncu --clock-control none --launch-skip 3 --launch-count 1 -k regex:matmul \
  --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats \
  --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SpeedOfLight \
  --section InstructionStats \
  $W run $K > $OUT/ncu-cuda.txt 2>&1; echo "ncu rc=$?"
grep -E "Duration|Registers|Achieved Occupancy|Warp Cycles Per Issued|Issue Slots Busy|Stall|No Eligible|One or More" $OUT/ncu-cuda.txt | head -30
timeout 200 ncu --clock-control none --launch-skip 3 --launch-count 1 -k regex:matmul --section SourceCounters \
  --page source --print-source sass --csv $W run $K > $OUT/ncu-cuda-sass.csv 2>&1; echo "ncu sass rc=$?"
wc -l $OUT/ncu-cuda-sass.csv
