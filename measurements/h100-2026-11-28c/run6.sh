#!/usr/bin/env bash
# 2026-11-28c call 6: what NVIDIA's Vulkan driver offers beyond what wgpu uses, for the
# products' next step: its extensions (cooperative matrices 1 and 2, workgroup memory
# explicit layout), the cooperative-matrix shapes it lists, its shared-memory limit.
# `vulkaninfo` from Debian's vulkan-tools 1.3.239 and the libraries it links (carried in
# .gl/vkt, unpacked beside it, not over the system's).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
mkdir -p /tmp/vkt; for f in .gl/vkt/*.deb; do dpkg -x "$f" /tmp/vkt; done
export LD_LIBRARY_PATH=/tmp/vkt/usr/lib/x86_64-linux-gnu:/tmp/vkt/lib/x86_64-linux-gnu
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
/tmp/vkt/usr/bin/vulkaninfo > $OUT/vulkaninfo.txt 2>&1; echo "vulkaninfo rc=$?"
grep -iE "cooperative|explicit_layout|maxComputeSharedMemorySize|apiVersion|driverVersion|driverInfo|subgroupSize|shader_bfloat|tensor" $OUT/vulkaninfo.txt | sort -u | head -40
