#!/usr/bin/env bash
# Issue 28 item 3, A/B/C in one call on the same GPU: three builds of weft that differ
# only in the WGSL writer.
#   old: main at 416a222 (an 8-lane f16 copy is 8 scalar loads and stores);
#   vec: an 8-lane f16 copy as two vec4<f16> loads where every access to the buffer is a
#        whole number of vec4s;
#   new: vec, and i32 divisions/remainders by constants of never-negative index values
#        written unsigned (`i32(u32(r) / 8u)`).
# Each tunes the f16 matmul on Vulkan at BERT's four products (batch 1, seq 128) and at
# 1024^3 and 4096^3 (the whole space, `weft sweep`), then times BERT-base's kernels with
# the Vulkan records of 2026-11-26b (`weft model bench`).
export WEFT_RECORDS=/tmp/none.json
S="m=128,n=2304,k=768;m=128,n=768,k=768;m=128,n=3072,k=768;m=128,n=768,k=3072;m=1024,n=1024,k=1024;m=4096,n=4096,k=4096"
start=$(date +%s)
for v in old vec new; do
  timeout 170 .dev/bin/weft-$v sweep --op matmul-f16 --target vulkan --shapes "$S" --sample 200 --budget-ms 10 --trials \
    --json $OUT/sweep-$v.json > $OUT/sweep-$v.txt 2>&1; echo "sweep $v rc=$? at $(( $(date +%s) - start )) s"
  tail -9 $OUT/sweep-$v.txt
done
for v in old vec new; do
  timeout 60 .dev/bin/weft-$v model bench zoo:bert_base --seq 128 --dtype f16 --targets vulkan --records .dev/records-all.json > $OUT/bert-$v.txt 2>&1
  echo "bert $v rc=$? at $(( $(date +%s) - start )) s"; head -4 $OUT/bert-$v.txt
done
