#!/usr/bin/env bash
# Builds the coopmat2 probe into .dev/coopmat2 (carried to the GPU machine):
#   GLSLANG=path/to/glslang VKHEADERS=dir/with/vulkan/vulkan.h bash scripts/coopmat2/build.sh
# glslang must know GL_NV_cooperative_matrix2 (15.x or later; Debian 12's 12.0 does not):
# a checkout of KhronosGroup/glslang built with -DENABLE_OPT=OFF is enough. The headers
# must be Vulkan-Headers 1.3.300 or later (VK_NV_cooperative_matrix2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/.dev/coopmat2"
mkdir -p "$out"
gcc -O2 -Wall -Wextra -I"${VKHEADERS:?set VKHEADERS}" -o "$out/probe" "$here/probe.c" -ldl -lm
"${GLSLANG:?set GLSLANG}" --target-env vulkan1.3 -o "$out/gemm.spv" "$here/gemm.comp"
"$GLSLANG" --target-env vulkan1.3 -DUNCLAMPED -o "$out/gemm-u.spv" "$here/gemm.comp"
"$GLSLANG" --target-env vulkan1.3 -DSTRIDED -o "$out/gemm-s.spv" "$here/gemm.comp"
ls -l "$out"
