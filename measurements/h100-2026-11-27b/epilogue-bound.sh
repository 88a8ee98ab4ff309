#!/usr/bin/env bash
# What the WGSL fp16 matmul's epilogue barriers cost on Vulkan: the rule's configs at
# five shapes, the epilogue as it is against the same kernel without its two barriers
# per accumulator fragment (WEFT_EXP_NOBAR in an experiment binary built from 8af8b18:
# wrong results where lanes race, a bound on what fewer barriers can gain).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
C=mma=16,g=8,vec=4,cp=0,st=2,fb=1,cc=0,wg=0
for sc in "m=1024,n=3072,k=768 wm=2,wn=4,fm=4,fn=4,bk=16" "m=4096,n=4096,k=4096 wm=2,wn=4,fm=4,fn=4,bk=16" \
          "m=128,n=2304,k=768 wm=4,wn=2,fm=1,fn=2,bk=64" "m=1024,n=768,k=768 wm=4,wn=4,fm=1,fn=2,bk=32" \
          "m=512,n=2304,k=768 wm=4,wn=4,fm=2,fn=2,bk=16"; do
  set -- $sc
  for rep in 1 2; do
    a=$(timeout 60 .dev/bin/weft-exp run --op matmul-f16 --shape $1 --target vulkan --config $C,$2 --iters 50 2>&1 | grep -E "^median" | awk '{print $2, $3}')
    b=$(WEFT_EXP_NOBAR=1 timeout 60 .dev/bin/weft-exp run --op matmul-f16 --shape $1 --target vulkan --config $C,$2 --iters 50 2>&1 | grep -E "^median" | awk '{print $2, $3}')
    echo "$1 $2: barriers $a, none $b"
  done
done | tee $OUT/epilogue-bound.txt
