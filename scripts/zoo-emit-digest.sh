#!/usr/bin/env bash
# Every kernel weft emits for every zoo model, per target and dtype, as one digest file:
# a line per kernel source (sha256 and name) and the partition `weft model graph` prints.
# Two digests of two commits that should emit the same kernels must be identical:
#
#   scripts/zoo-emit-digest.sh target/release/weft /tmp/before.txt
#   ... change ...
#   scripts/zoo-emit-digest.sh target/release/weft /tmp/after.txt && diff /tmp/before.txt /tmp/after.txt
#
# No GPU needed: each target's offline profile (`Target::limits`) drives the compile.
set -euo pipefail
weft=${1:?usage: zoo-emit-digest.sh WEFT_BINARY OUT_FILE}
out=${2:?usage: zoo-emit-digest.sh WEFT_BINARY OUT_FILE}
models=${MODELS:-"resnet50 inception_v3 mobilenet_v2 bert_base gpt2"}
targets=${TARGETS:-"cuda|cuda -arch=sm_90a|vulkan|metal|webgpu|cpu"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: > "$out.tmp"
IFS='|' read -r -a target_list <<< "$targets"
for m in $models; do
  for t in "${target_list[@]}"; do
    for d in f32 f16; do
      dir="$work/k"
      rm -rf "$dir"
      echo "== zoo:$m --target '$t' --dtype $d" >> "$out.tmp"
      if "$weft" model graph "zoo:$m" --target "$t" --dtype "$d" --emit "$dir" > "$work/graph.txt" 2>&1; then
        # The partition and schedules as printed (without the line naming the temp dir).
        grep -v '^wrote ' "$work/graph.txt" >> "$out.tmp"
        (cd "$dir" && sha256sum -- *) >> "$out.tmp"
      else
        echo "refused: $(tail -1 "$work/graph.txt")" >> "$out.tmp"
      fi
    done
  done
done
mv "$out.tmp" "$out"
echo "wrote $out ($(grep -c '^== ' "$out") compiles, $(grep -cE '^[0-9a-f]{64} ' "$out") kernels)"
