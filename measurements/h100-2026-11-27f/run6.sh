#!/usr/bin/env bash
# 2026-11-27f, call 6 (main 5d8616a). Where the next kernel of a captured CUDA graph may
# launch (runtime/src/cuda/graph.rs): WEFT_PDL_GRAPH=exit (as capture makes the edge: at
# the previous kernel's blocks' exit, the default), =launch (when every block of the
# previous kernel has begun), =waves (that, for grids larger than the GPU holds at once;
# at exit for the others). One binary, modes alternating twice per model; `weft model
# run` now also compares the last timed run's outputs with the checked run's ("replayed").
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
start=$(date +%s)
{
for m in "zoo:resnet50" "zoo:resnet50 --dtype f16" "zoo:resnet50 --dtype f16 --batch 8" "zoo:inception_v3 --dtype f16" "zoo:mobilenet_v2 --dtype f16" "zoo:bert_base --dtype f16" "zoo:gpt2 --dtype f16" "zoo:gpt2 --dtype f16 --seq 512" "zoo:gpt2 --dtype f16 --batch 8"; do
  for rep in 1 2; do for mode in exit launch waves; do
    out=$(WEFT_PDL_GRAPH=$mode timeout 40 $W model run $m --target cuda 2>&1)
    echo "$m $mode: $(echo "$out" | grep -E '^median' | tr '\n' ' ') | $(echo "$out" | grep -E '^replayed' | awk '{print $2, $NF}' | tr '\n' ' ') | $(echo "$out" | grep -cE 'WRONG|^error: ') bad"
  done; done
done
} > $OUT/graph-release.txt 2>&1; cat $OUT/graph-release.txt
echo "done at $(( $(date +%s) - start )) s"
