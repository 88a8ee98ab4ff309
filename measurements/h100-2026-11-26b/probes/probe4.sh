#!/usr/bin/env bash
# Issue 28, fourth call: is the slow state NVIDIA's shader disk cache being written?
# Each process compiles pipelines the cache has not seen (a conv at another height),
# one after another; half with __GL_SHADER_DISK_CACHE=0. The first cell is timed again
# at the end of each process (time vs pipeline). nvidia-smi logs the clocks.
P=.dev/bin/vulkan_probe
W=.dev/bin/weft
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,utilization.gpu,clocks_event_reasons.active --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
smi=$!
summary() { awk -v tag="$1" '/^## /{p=$0} /median/{t=$5; n++; if (t > 85) {s++; list = list " [" p " " $2 "]"}} END{printf "%s: %d cells, %d slow:%s\n", tag, n, s, list}' "$2"; }
for h in 56 55 54 53 52 51 50 49; do echo "## h=$h $(date +%T.%N)"; $P slow conv2d-f16 n=8,c=64,h=$h,w=56,k=64,r=3,s=3,stride=1,pad=1 2>&1; done > $OUT/cache-on.txt
summary "disk cache on, fresh pipelines" $OUT/cache-on.txt
for h in 48 47 46 45 44 43 42 41; do echo "## h=$h $(date +%T.%N)"; __GL_SHADER_DISK_CACHE=0 $P slow conv2d-f16 n=8,c=64,h=$h,w=56,k=64,r=3,s=3,stride=1,pad=1 2>&1; done > $OUT/cache-off.txt
summary "disk cache off, fresh pipelines" $OUT/cache-off.txt
for h in 56 55 54; do echo "## h=$h again $(date +%T.%N)"; $P slow conv2d-f16 n=8,c=64,h=$h,w=56,k=64,r=3,s=3,stride=1,pad=1 2>&1; done > $OUT/cache-hit.txt
summary "disk cache on, cached pipelines" $OUT/cache-hit.txt
grep -h "again" $OUT/cache-*.txt | awk '{print $5}' | tr '\n' ' '; echo
for s in 64 96; do echo "seq $s cache off: $(__GL_SHADER_DISK_CACHE=0 $W model bench zoo:bert_base --seq $s --dtype f16 --targets vulkan --no-kernels --iters 20 2>&1 | grep -E '^vulkan')"; done | tee $OUT/bert.txt
for s in 80 112; do echo "seq $s cache on: $($W model bench zoo:bert_base --seq $s --dtype f16 --targets vulkan --no-kernels --iters 20 2>&1 | grep -E '^vulkan')"; done | tee -a $OUT/bert.txt
for s in 80 112; do echo "seq $s cache on, again: $($W model bench zoo:bert_base --seq $s --dtype f16 --targets vulkan --no-kernels --iters 20 2>&1 | grep -E '^vulkan')"; done | tee -a $OUT/bert.txt
kill $smi
