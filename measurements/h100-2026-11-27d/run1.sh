#!/usr/bin/env bash
# 2026-11-27d, call 1: the fp32 template's loads without tests (rows and columns clamped,
# k tested only in a ragged last tile), old and new binaries alternating at the shapes it
# should move (odd sizes, bk=8 picks) on CUDA and Vulkan; the 60-shape `mixed` figure
# again (row tiles, the unswitched sum, the clamped loads), 48 configs tuned a shape;
# and the kernels cuBLAS picks at the shapes weft misses.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
start=$(date +%s)
D=measurements/h100-2026-11-27d
S="m=1021,n=1021,k=1021;m=999,n=1001,k=997;m=509,n=509,k=509;m=2039,n=2039,k=2039;m=1000,n=1000,k=1000;m=1024,n=1024,k=1024;m=4096,n=4096,k=4096"
F="r1021:wm=1,wn=2,rm=2,rn=2,lm=4,ln=8,tm=4,tn=4,bk=16,g=8,mb=0;t1024:wm=4,wn=2,rm=2,rn=2,lm=4,ln=8,tm=4,tn=4,bk=16,g=8,mb=0,sk=2;r4096:wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0"
for round in 1 2; do
  for b in old new; do
    W=.dev/bin/weft; [ $b = old ] && W=.dev/bin/weft-old
    timeout 60 $W sweep --op matmul --target cuda --shapes "$S" --sample 0 --budget-ms 10 --fixed "$F" \
      --json $OUT/ab-cuda-$b-$round.json > $OUT/ab-cuda-$b-$round.txt 2>&1
    echo "ab cuda $b $round rc=$? at $(( $(date +%s) - start )) s"
  done
done
V="m=1021,n=1021,k=1021;m=3001,n=3001,k=3001;m=4096,n=4096,k=4096"
for b in old new; do
  W=.dev/bin/weft; [ $b = old ] && W=.dev/bin/weft-old
  timeout 70 $W sweep --op matmul --target vulkan --shapes "$V" --sample 0 --budget-ms 10 --fixed "$F" \
    --json $OUT/ab-vk-$b.json > $OUT/ab-vk-$b.txt 2>&1
  echo "ab vulkan $b rc=$? at $(( $(date +%s) - start )) s"
done
timeout 60 python3 $D/cublas_kernels.py > $OUT/cublas-kernels.txt 2>&1; echo "cublas names rc=$?"
timeout 330 .dev/bin/weft sweep --op matmul --target cuda --shapes mixed --sample 48 --budget-ms 10 \
  --json $OUT/fp32-mixed.json > $OUT/fp32-mixed.txt 2>&1; echo "mixed rc=$? at $(( $(date +%s) - start )) s"
tail -3 $OUT/fp32-mixed.txt
cd $OUT && tar czf ab.tgz ab-* && rm ab-*
