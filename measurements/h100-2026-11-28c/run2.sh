#!/usr/bin/env bash
# 2026-11-28c call 2: two fragment sets over one 16x16 sub-step (fb = 2 at bk = 16, new
# in the fp16 template) on Vulkan. (a) The whole models, the rule's picks as they are
# against the same picks with fb = 2 where their k step is one sub-step
# (WEFT_EXP_FB2=1 in the experiment binary: the large tiles of the 512-token and batch-8
# products) and with fb = 2 on every pick (=all), alternating. (b) The shader cache after
# the fb = 2 product at 1024 x 3072 x 768, for its SASS.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
B=.dev/bin/weft-exp
for s in m=1024,n=3072,k=768 m=4096,n=4096,k=4096 m=512,n=2304,k=768 m=1024,n=768,k=3072; do
  line="$s"
  for v in none 1 all none 1 all; do
    if [ $v = none ]; then e="WEFT_X=0"; else e="WEFT_EXP_FB2=$v"; fi
    t=$(env $e timeout 60 $B run --op matmul-f16 --shape $s --target vulkan --iters 50 2>&1 | grep -E "^median|^error" | awk '{print $2, $3}' | tr '\n' ' ')
    line="$line | $v $t"
  done
  echo "$line"
done 2>&1 | tee $OUT/products.txt
( export __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=/tmp/nvc __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 ; mkdir -p /tmp/nvc ; WEFT_EXP_FB2=1 timeout 60 $B run --op matmul-f16 --shape m=1024,n=3072,k=768 --target vulkan --iters 5 > /dev/null 2>&1 ; tar czf $OUT/nvcache-fb2.tgz -C /tmp nvc )
for mb in "bert_base 8 128" "gpt2 8 128" "bert_base 1 512" "gpt2 1 512" "gpt2 8 512"; do
  set -- $mb
  for v in none 1 all none 1 all; do
    if [ $v = none ]; then e="WEFT_X=0"; else e="WEFT_EXP_FB2=$v"; fi
    t=$(env $e timeout 90 $B model bench zoo:$1 --batch $2 --seq $3 --dtype f16 --targets vulkan --no-kernels --iters 20 2>&1 | grep -E "^vulkan" | tail -1)
    echo "$1 b$2/$3 fb2=$v: $t"
  done
done 2>&1 | tee $OUT/models.txt
