#!/usr/bin/env bash
# Call 1 (2026-11-28d): what the driver offers for VK_NV_cooperative_matrix2, and an fp16
# product through workgroup-scope matrices (scripts/coopmat2) at the transformer products
# and 4096³, beside weft's own Vulkan (WGSL) and CUDA kernels in the same call.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
export __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=/tmp/nvc __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
P=.dev/coopmat2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$P/probe info 2>&1 | tee $OUT/info.txt
g() { timeout 60 $P/probe gemm "$@" 2>&1 | tee -a $OUT/gemm.txt; }
# Tiles and workgroup sizes at 4096³, clamped and unclamped layouts.
for spv in gemm gemm-u; do
  for t in "128 128 32 128" "128 128 32 256" "128 256 32 256" "256 128 32 256" "128 128 64 256" "128 256 64 256" "64 128 32 128" "64 64 32 128"; do
    set -- $t
    echo "== $spv $t" >> $OUT/gemm.txt
    g $P/$spv.spv 4096 4096 4096 $1 $2 $3 $4 1 20
  done
done
for u in 2 4; do g $P/gemm-u.spv 4096 4096 4096 128 256 32 256 $u 20; done
# A small shape checked in full detail by the same sampling (odd edges, clamped).
g $P/gemm.spv 1000 1000 1024 128 128 32 256 1 20
g $P/gemm.spv 197 768 3072 128 128 32 256 1 20
# Transformer products.
for s in "512 2304 768" "1024 3072 768" "1024 768 3072" "128 2304 768" "4096 3072 768" "4096 768 3072"; do
  set -- $s
  for t in "128 128 32 256" "128 256 32 256" "64 128 32 128"; do
    set -- $s $t
    g $P/gemm.spv $1 $2 $3 $4 $5 $6 $7 1 50
  done
done
tar czf $OUT/nvc.tgz -C /tmp nvc
# weft's own kernels at the same shapes, same call.
for s in m=4096,n=4096,k=4096 m=512,n=2304,k=768 m=1024,n=3072,k=768 m=1024,n=768,k=3072 m=128,n=2304,k=768 m=4096,n=3072,k=768 m=4096,n=768,k=3072 m=1000,n=1000,k=1024 m=197,n=768,k=3072; do
  for t in vulkan cuda; do
    .dev/bin/weft run --op matmul-f16 --shape $s --target $t --iters 50 2>&1 | grep -E "^(config|median|error)" | sed "s/^/$t $s: /" | tee -a $OUT/weft.txt
  done
done
