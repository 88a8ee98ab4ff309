#!/usr/bin/env bash
# 2026-11-28c call 4 (main + the rule's two fragment sets over one sub-step): (1) the
# whole Vulkan fp16 space, with fb = 2 at bk = 16 now in it, at BERT's and GPT-2's
# products of 512 tokens and batch 8 and at 4096^3 (`weft sweep --trials`: data for the
# rule's test and a refit); (2) weft against Hugging Face's BERT-base and GPT-2 on
# Vulkan, f16, with the rule's picks of today (loads two steps ahead, two fragment sets).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
WEFT=$W TARGETS="vulkan" DTYPES=f16 SHAPES="1x128 2x37" timeout 150 bash scripts/torch_check.sh > $OUT/torch-check.txt 2>&1
echo "torch check rc=$?"; tail -12 $OUT/torch-check.txt
S="m=4096,n=4096,k=4096"
for m in 512 1024 4096; do
  for nk in "n=2304,k=768" "n=768,k=768" "n=3072,k=768" "n=768,k=3072"; do S="$S;m=$m,$nk"; done
done
timeout 400 $W sweep --op matmul-f16 --target vulkan --shapes "$S" --sample 2000 --trials --budget-ms 10 \
  --json $OUT/f16-vk-fb.json > $OUT/f16-vk-fb.txt 2>&1; echo "sweep rc=$?"
grep -vE "^weft:" $OUT/f16-vk-fb.txt | tail -15
