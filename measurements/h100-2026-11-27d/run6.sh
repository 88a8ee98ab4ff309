#!/usr/bin/env bash
# 2026-11-27d, call 6: why 4096³'s steps-of-8 tile slowed on Vulkan with the untested loads
# (3.744 -> 4.003 ms): the same binary with local arrays kept scalar in WGSL (`weft-novec`:
# B's staging registers are an `array<vec4<f32>>` since every access became 4-wide),
# against this one and the one before the change, alternating. (Both new binaries were
# linked with a stale weft-ir, without `min`'s modular analysis: see run7.sh. None of the
# configs here clamps a vector index at these shapes, so the comparison stands.)
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
V="m=1024,n=1024,k=1024;m=3001,n=3001,k=3001;m=4096,n=4096,k=4096"
F="r4096:wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0;t4096:wm=2,wn=2,rm=2,rn=1,lm=4,ln=8,tm=8,tn=4,bk=16,g=8,mb=0;t1024:wm=2,wn=1,rm=2,rn=2,lm=4,ln=8,tm=4,tn=4,bk=16,g=8,mb=0"
for round in 1 2; do for b in old new novec; do
  W=.dev/bin/weft; [ $b != new ] && W=.dev/bin/weft-$b
  timeout 60 $W sweep --op matmul --target vulkan --shapes "$V" --sample 0 --budget-ms 10 --fixed "$F" \
    > $OUT/vk-$b-$round.txt 2>&1
  echo "$b $round rc=$? at $(( $(date +%s) - start )) s"; grep -E "^m=" $OUT/vk-$b-$round.txt
done; done
