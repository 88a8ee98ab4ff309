#!/usr/bin/env bash
# Issue 28, sixth call: (1) settling for at least 200 ms, on processes compiling fresh
# conv pipelines (the clock decay); (2) BERT-base whole-model runs on Vulkan in processes
# that compile pipelines the driver has not seen (a sequence length not run before):
# 20 timed runs vs 1000, the shader disk cache on vs off, then the same lengths again
# (cached).
P=.dev/bin/vulkan_probe
W=.dev/bin/weft
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
smi=$!
summary() { awk -v tag="$1" '/^## /{p=$0} /median/{t=$5; n++; if (t > 85) {s++; list = list " [" p " " $2 "]"}} END{printf "%s: %d cells, %d slow:%s\n", tag, n, s, list}' "$2"; }
for h in 48 47 46 45 44 43; do echo "## h=$h $(date +%T.%N)"; $P slow conv2d-f16 n=8,c=64,h=$h,w=56,k=64,r=3,s=3,stride=1,pad=1 2>&1; done > $OUT/conv-settle.txt
summary "fresh pipelines, settled 200 ms" $OUT/conv-settle.txt
grep -h "again" $OUT/conv-settle.txt | awk '{print $5}' | tr '\n' ' '; echo
b() { echo "$(date +%T) $1: $(env $2 $W model bench zoo:bert_base --seq $3 --dtype f16 --targets vulkan --no-kernels --iters $4 2>&1 | grep -E '^vulkan' | sed 's/  */ /g')"; }
{
for s in 72 88 104; do b "seq $s fresh, cache on, 20 runs" "X=1" $s 20; done
for s in 76 92 108; do b "seq $s fresh, cache on, 1000 runs" "X=1" $s 1000; done
for s in 68 84 100 116; do b "seq $s fresh, cache off, 20 runs" "__GL_SHADER_DISK_CACHE=0" $s 20; done
for s in 72 88 104; do b "seq $s cached, 20 runs" "X=1" $s 20; done
} 2>&1 | tee $OUT/bert.txt
kill $smi
