#!/usr/bin/env bash
# Issue 26: split-K on the GPU, a tuning at 197x768x3072 and at 2048^3, then the first half
# of the 60-shape sweep (rule vs tuned vs fixed vs cuBLAS).
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
R=$OUT/records.json
S=m=197,n=768,k=3072
$W run --op matmul --shape $S --target cuda > $OUT/run-197-rule.txt 2>&1
$W run --op matmul --shape $S --target cuda --config sk=4 > $OUT/run-197-sk4.txt 2>&1
$W run --op matmul --shape $S --target vulkan --config sk=4 > $OUT/run-197-sk4-vk.txt 2>&1
$W run --op conv2d-f16 --shape n=1,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1 --target cuda > $OUT/run-conv7-rule.txt 2>&1
for f in $OUT/run-*.txt; do echo "$f: $(grep -E '^(median|error)' $f | tr '\n' ' ')"; grep -A1 '^config' $f | tail -1; done
timeout 150 $W tune --op matmul --shape $S --target cuda --records $R > $OUT/tune-197.txt 2>&1; echo "tune197 rc=$?"
tail -4 $OUT/tune-197.txt
timeout 90 $W tune --op matmul --shape m=2048,n=2048,k=2048 --target cuda --records $R --sample 96 > $OUT/tune-2048.txt 2>&1; echo "tune2048 rc=$?"
C=$(grep -oP '^best \K\S+' $OUT/tune-2048.txt); echo "C2048=$C"
timeout 270 $W sweep --shapes mixed --part 1/2 --target cuda --sample 64 --fixed "default;tuned at 2048³:$C" --json $OUT/mixed-1.json > $OUT/mixed-1.txt 2>&1; echo "mixed1 rc=$?"
tail -5 $OUT/mixed-1.txt
