#!/usr/bin/env bash
# The changes of 2026-11-27c measured in one call (old: d640bf4's binary; new: the final
# binary of the session):
#  a. row tiles and the rule at m = 1 (fp32 on CUDA), the summing kernel without its
#     per-part bounds branch: the rule, a tuning of the space (which now holds row tiles)
#     and two fixed row tiles beside cuBLAS;
#  b. the fp32 rule on Vulkan within 20 staged elements a thread: old and new rule at the
#     five shapes of sweeps1/sweeps3 (8 configs tuned beside, which keep the GPU busy);
#  c. ResNet-50 in fp32 on Vulkan and CUDA (its 1×1000×2048 classifier takes the row tile;
#     its fp32 convolutions the Vulkan rule), old and new.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
G="g3:wm=1,wn=4,rm=1,rn=1,lm=1,ln=32,tm=1,tn=1,bk=16,g=8,mb=0,sk=64;g7:wm=1,wn=4,rm=1,rn=1,lm=1,ln=32,tm=1,tn=1,bk=32,g=8,mb=0,sk=32"
timeout 60 .dev/bin/weft sweep --op matmul --target cuda --shapes "m=1,n=1000,k=2048;m=1,n=768,k=3072;m=1,n=4096,k=4096" \
  --sample 32 --budget-ms 5 --fixed "$G" --json $OUT/a-gemv.json > $OUT/a-gemv.txt 2>&1
echo "a rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/a-gemv.txt | tail -7
S="m=1024,n=1024,k=1024;m=3001,n=3001,k=3001;m=4096,n=4096,k=4096;m=1021,n=1021,k=1021;m=1000,n=1000,k=1000"
for b in old new; do
  w=.dev/bin/weft; [ $b = old ] && w=.dev/bin/weft-old
  timeout 100 $w sweep --op matmul --target vulkan --shapes "$S" --sample 8 --budget-ms 5 \
    --json $OUT/b-fp32-vk-$b.json > $OUT/b-fp32-vk-$b.txt 2>&1
  echo "b $b rc=$? at $(( $(date +%s) - start )) s"; grep -E "^m=|geometric" $OUT/b-fp32-vk-$b.txt
done
for t in vulkan cuda; do for b in old new new old; do
  w=.dev/bin/weft; [ $b = old ] && w=.dev/bin/weft-old
  echo "c resnet50 f32 $t $b: $(timeout 60 $w model run zoo:resnet50 --dtype f32 --target $t --iters 30 2>&1 | grep -E '^(median|error)' | tr '\n' ' ')"
done; done
echo "done at $(( $(date +%s) - start )) s"
(cd $OUT && tar czf sweeps4.tgz *.json *.txt && rm -f *.json *.txt)
