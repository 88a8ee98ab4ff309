#!/usr/bin/env bash
# Call 2 (2026-11-28d): the coopmat2 product again with the driver's shader cache kept
# (its SASS read by scripts/vk_sass.py), strided (KHR) loads beside tensor-addressed ones,
# larger tiles, and the transformer products timed (call 1's short kernels ran out of
# rounds before the warm-up ended).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH=/tmp/nvc __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1
mkdir -p /tmp/nvc
P=.dev/coopmat2
g() { timeout 60 $P/probe gemm "$@" 2>&1 | grep -v ^device | tee -a $OUT/gemm.txt; }
# One pipeline first, alone in the cache: the 128x256x64 tile (call 1's fastest).
g $P/gemm.spv 4096 4096 4096 128 256 64 256 1 20
tar czf $OUT/nvc-first.tgz -C /tmp nvc
for spv in gemm gemm-s; do
  for t in "128 128 32 128" "128 256 64 256" "256 128 64 256" "256 256 32 256" "256 256 64 256" "128 128 64 128"; do
    set -- $t
    echo "== $spv 4096^3 $t" >> $OUT/gemm.txt
    g $P/$spv.spv 4096 4096 4096 $1 $2 $3 $4 1 20
  done
done
for s in "512 2304 768" "1024 3072 768" "1024 768 3072" "128 2304 768" "4096 3072 768" "4096 768 3072"; do
  for t in "128 128 32 128" "128 256 64 256" "64 128 32 128"; do
    set -- $s $t
    g $P/gemm.spv $1 $2 $3 $4 $5 $6 $7 1 50
  done
done
tar czf $OUT/nvc.tgz -C /tmp nvc
