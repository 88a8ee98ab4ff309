#!/usr/bin/env bash
# 2026-11-28c call 1. (a) Where the Vulkan fp16 products' time goes, by ablation: the
# rule's pick at five transformer shapes, as it is, with a quarter of the shared-stage
# stores (WEFT_EXP_STS: one f16 of each vec4, wrong results), with the global loads read
# from a 4 KiB window (WEFT_EXP_LDG: L1 hits, wrong results), and both. Experiment binary
# `weft-exp` (main + the two env switches in codegen-wgsl's vector_store, not on main).
# (b) The NVIDIA Vulkan driver's shader disk cache after those runs, tarred, to see
# whether the compiled code (SASS) can be read from it. (c) vk-f16-refit.sh.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
export __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=/tmp/nvc __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1
mkdir -p /tmp/nvc
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
B=.dev/bin/weft-exp
for s in m=1024,n=3072,k=768 m=512,n=2304,k=768 m=128,n=2304,k=768 m=1024,n=768,k=3072 m=4096,n=4096,k=4096; do
  for rep in 1 2; do
    line="$s"
    for v in none STS LDG both; do
      case $v in none) e="";; STS) e="WEFT_EXP_STS=1";; LDG) e="WEFT_EXP_LDG=1";; both) e="WEFT_EXP_STS=1 WEFT_EXP_LDG=1";; esac
      out=$(env $e timeout 60 $B run --op matmul-f16 --shape $s --target vulkan --iters 50 2>&1)
      t=$(echo "$out" | grep -E "^median" | awk '{print $2, $3}')
      [ $rep = 1 ] && [ $v = none ] && echo "$out" | grep -iE "config|rule" | head -3
      line="$line | $v $t"
    done
    echo "$line"
  done
done 2>&1 | tee $OUT/ablation.txt
ls -laR /tmp/nvc | head -30
tar czf $OUT/nvcache.tgz -C /tmp nvc
which nvdisasm cuobjdump; nvdisasm --help 2>&1 | grep -iE "binary|raw" | head
bash measurements/h100-2026-11-28c/vk-f16-refit.sh
