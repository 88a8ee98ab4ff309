#!/usr/bin/env bash
# Three questions in one call (old: d640bf4's binary; new: the fitted model over views):
#  A. the fp16 conv rule on Vulkan: the block-count rule (old) against the Vulkan-fitted
#     tensor-core model over views (new), the rule's pick alone at ResNet-50's 23 layers;
#  B. fp32 GEMV-shaped tiles of the matmul template (one or two rows, a warp across n,
#     split up to 64 parts) at m = 1 on CUDA, beside cuBLAS and a tuning of the space;
#  C. the fp32 rule on Vulkan at unaligned shapes (3001³ ran 0.32× of the tuned best):
#     48 configs of the space with every time kept (--trials) at 3001³, 1021³, 1000³;
#  D. the fp16 conv's whole space on CUDA at the two ResNet-50 layers where 32 sampled
#     configs stayed below cuDNN (1×1 1024→256 and 1024→512 at 14²).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
for b in old new; do
  w=.dev/bin/weft; [ $b = old ] && w=.dev/bin/weft-old
  timeout 90 $w sweep --op conv2d-f16 --target vulkan --shapes resnet50 --sample 0 --budget-ms 5 \
    --json $OUT/A-conv-vk-$b.json > $OUT/A-conv-vk-$b.txt 2>&1
  echo "A $b rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/A-conv-vk-$b.txt | tail -2
done
timeout 80 .dev/bin/weft sweep --op matmul --target cuda --shapes "m=1,n=1000,k=2048;m=1,n=768,k=3072;m=1,n=4096,k=4096" \
  --sample 32 --budget-ms 5 --fixed "g1:wm=1,wn=1,rm=1,rn=1,lm=1,ln=32,tm=1,tn=4,bk=32,g=8,mb=0,sk=64;g2:wm=1,wn=4,rm=1,rn=1,lm=1,ln=32,tm=1,tn=1,bk=32,g=8,mb=0,sk=64;g3:wm=1,wn=4,rm=1,rn=1,lm=1,ln=32,tm=1,tn=1,bk=16,g=8,mb=0,sk=64;g4:wm=1,wn=2,rm=1,rn=1,lm=1,ln=32,tm=1,tn=2,bk=32,g=8,mb=0,sk=64;g5:wm=1,wn=4,rm=1,rn=1,lm=1,ln=32,tm=1,tn=2,bk=16,g=8,mb=0,sk=32;g6:wm=1,wn=8,rm=1,rn=1,lm=1,ln=32,tm=1,tn=1,bk=32,g=8,mb=0,sk=64;g7:wm=1,wn=4,rm=1,rn=1,lm=1,ln=32,tm=1,tn=1,bk=32,g=8,mb=0,sk=32;g8:wm=1,wn=2,rm=1,rn=1,lm=2,ln=16,tm=1,tn=4,bk=32,g=8,mb=0,sk=64" --json $OUT/B-gemv.json > $OUT/B-gemv.txt 2>&1
echo "B rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/B-gemv.txt | tail -8
timeout 200 .dev/bin/weft sweep --op matmul --target vulkan --shapes "m=3001,n=3001,k=3001;m=1021,n=1021,k=1021;m=1000,n=1000,k=1000" \
  --sample 48 --budget-ms 5 --trials --json $OUT/C-fp32-vk.json > $OUT/C-fp32-vk.txt 2>&1
echo "C rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/C-fp32-vk.txt | tail -5
timeout 120 .dev/bin/weft sweep --op conv2d-f16 --target cuda --shapes "n=1,c=1024,h=14,w=14,k=256,r=1,s=1,stride=1,pad=0;n=1,c=1024,h=14,w=14,k=512,r=1,s=1,stride=1,pad=0" \
  --sample 600 --budget-ms 5 --json $OUT/D-conv-full.json > $OUT/D-conv-full.txt 2>&1
echo "D rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/D-conv-full.txt | tail -4
(cd $OUT && tar czf sweeps3.tgz *.json *.txt && rm -f *.json *.txt)
