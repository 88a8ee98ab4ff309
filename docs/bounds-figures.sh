#!/usr/bin/env bash
# The runtime-checks figures of docs/results.md, on the GPU machine: every op x schedule
# of OPS at its bench shapes on Vulkan with naga's runtime checks on every shader
# (--checked-shaders, beside CUDA), with the checks off where the bounds prover proves
# the kernel (the default), and with them off everywhere (--unchecked-shaders).
#   bash docs/bounds-figures.sh OUT OPS      (OPS: comma-separated, as for weft bench)
# Writes OUT/<tag>-{checked,proven,unchecked}.{txt,json}, tag = the first op.
set -u
out=$1; ops=$2; weft=${WEFT:-.dev/bin/weft}
tag=${ops%%,*}
$weft bench --targets cuda,vulkan --ops "$ops" --checked-shaders --json "$out/$tag-checked.json" > "$out/$tag-checked.txt" 2>&1
$weft bench --targets vulkan --ops "$ops" --json "$out/$tag-proven.json" > "$out/$tag-proven.txt" 2>&1
$weft bench --targets vulkan --ops "$ops" --unchecked-shaders --json "$out/$tag-unchecked.json" > "$out/$tag-unchecked.txt" 2>&1
tail -n 3 "$out"/$tag-*.txt
