#!/usr/bin/env bash
# Issue 28, fifth call, after the fix (timings on wgpu settle the clocks first): the
# processes that compile pipelines the driver has not seen, which came out slow in the
# fourth call, and BERT-base / GPT-2 compiled fresh; nvidia-smi logs the clocks.
P=.dev/bin/vulkan_probe
W=.dev/bin/weft
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,utilization.gpu,clocks_event_reasons.active --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
smi=$!
summary() { awk -v tag="$1" '/^## /{p=$0} /median/{t=$5; n++; if (t > 85) {s++; list = list " [" p " " $2 "]"}} END{printf "%s: %d cells, %d slow:%s\n", tag, n, s, list}' "$2"; }
for h in 56 55 54 53 52 51 50 49; do echo "## h=$h $(date +%T.%N)"; $P slow conv2d-f16 n=8,c=64,h=$h,w=56,k=64,r=3,s=3,stride=1,pad=1 2>&1; done > $OUT/cache-on.txt
summary "fresh pipelines, settled clocks" $OUT/cache-on.txt
grep -h "again" $OUT/cache-on.txt | awk '{print $5}' | tr '\n' ' '; echo
$W model bench zoo:bert_base --seq 128 --dtype f16 --targets cuda,vulkan --records .dev/records-bert_base.json > $OUT/bert-128.txt 2>&1; head -4 $OUT/bert-128.txt
$W model bench zoo:gpt2 --seq 128 --dtype f16 --targets cuda,vulkan --no-kernels > $OUT/gpt2-128.txt 2>&1; head -4 $OUT/gpt2-128.txt
$W model bench zoo:bert_base --seq 512 --dtype f16 --targets vulkan --no-kernels > $OUT/bert-512.txt 2>&1; head -4 $OUT/bert-512.txt
kill $smi
