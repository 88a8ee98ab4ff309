#!/usr/bin/env bash
# The runtime-checks figures of docs/results-history.md, on the GPU machine: every op x schedule
# of OPS at its bench shapes on CUDA and on Vulkan three ways, side by side in one
# process (so the GPU's clocks are the same for all four): naga's runtime checks on every
# shader (`vulkan -checks=checked`), off where the bounds prover proves the kernel
# (`vulkan`, the default), off everywhere (`vulkan -checks=unchecked`).
#   bash scripts/bounds-figures.sh OUT OPS      (OPS: comma-separated, as for weft bench)
# Writes OUT/<first op>.{txt,json}.
set -u
out=$1; ops=$2; weft=${WEFT:-.dev/bin/weft}
tag=${ops%%,*}
$weft bench --targets "cuda,vulkan -checks=checked,vulkan,vulkan -checks=unchecked" --ops "$ops" \
  --json "$out/$tag.json" > "$out/$tag.txt" 2>&1
tail -n 2 "$out/$tag.txt"
