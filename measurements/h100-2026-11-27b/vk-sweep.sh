#!/usr/bin/env bash
# Issue 28 / issue 26 item 2 on Vulkan: the data for a rule fitted to Vulkan's kernel
# times. The fp16 matmul on the H100 through Vulkan, the rule's candidate sub-space
# (one set of fragments, register-staged copies: cc=0, fb=1) timed whole with its
# splits at 24 shapes: BERT/GPT-2's four products at 128, 512, 1024 and 4096 rows, and
# squares, primes, small M, long K, a ResNet-50 conv as a GEMM.
# ONLY=cc=0,fb=1 TAG=sub: the sub-space; neither: the whole space (TAG=all).
# Run on the GPU machine from the repository root (carry .gl, .dev).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
S=""
for m in 128 512 1024 4096; do
  for nk in "n=2304,k=768" "n=768,k=768" "n=3072,k=768" "n=768,k=3072"; do S="$S;m=$m,$nk"; done
done
S="${S#;};m=1024,n=1024,k=1024;m=4096,n=4096,k=4096;m=197,n=768,k=3072;m=1000,n=1000,k=1000"
S="$S;m=8,n=4096,k=4096;m=2048,n=2048,k=2048;m=3136,n=64,k=576;m=256,n=256,k=8192"
start=$(date +%s)
for part in "$@"; do
  timeout 290 .dev/bin/weft sweep --op matmul-f16 --target vulkan --shapes "$S" --part $part/4 \
    --sample 400 ${ONLY:+--only $ONLY} --budget-ms 8 --trials --json $OUT/vk$TAG-$part.json > $OUT/vk$TAG-$part.txt 2>&1
  echo "part $part rc=$? at $(( $(date +%s) - start )) s"; tail -4 $OUT/vk$TAG-$part.txt
done
