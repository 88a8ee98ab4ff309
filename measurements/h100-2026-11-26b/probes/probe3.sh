#!/usr/bin/env bash
# Issue 28, third call: how often the slow state comes, and whether parallel pipeline
# builds or NVIDIA's shader disk cache bring it: 16 processes each building 8 variants
# of a conv's pipeline one by one, 16 building them at once, 16 at once with the disk
# cache off; then six BERT-base processes on Vulkan; the rule's Vulkan configs for
# BERT's QKV product.
P=.dev/bin/vulkan_probe
W=.dev/bin/weft
shape=n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1
summary() { awk -v tag="$1" '/^## process/{p=$3} /median/{t=$5; n++; if (t > 85) {s++; list = list " p" p "/" $2}} END{printf "%s: %d cells, %d slow:%s\n", tag, n, s, list}' "$2"; }
for i in $(seq 1 16); do echo "## process $i"; $P slow conv2d-f16 $shape 2>&1; done > $OUT/slow-seq.txt
summary sequential $OUT/slow-seq.txt
for i in $(seq 1 16); do echo "## process $i"; $P slow --parallel conv2d-f16 $shape 2>&1; done > $OUT/slow-par.txt
summary parallel $OUT/slow-par.txt
for i in $(seq 1 16); do echo "## process $i"; __GL_SHADER_DISK_CACHE=0 $P slow --parallel conv2d-f16 $shape 2>&1; done > $OUT/slow-par-nocache.txt
summary "parallel, no disk cache" $OUT/slow-par-nocache.txt
ls -la ~/.cache/nvidia 2>&1 | head -3; du -sh ~/.cache/nvidia 2>/dev/null
for i in 1 2 3 4 5 6; do
  $W model bench zoo:bert_base --seq 128 --dtype f16 --targets vulkan --no-kernels --iters 20 --records .dev/records-bert_base.json 2>&1 | grep -E "^vulkan"
done | tee $OUT/bert-6.txt
$W run --op matmul-f16 --shape m=128,n=2304,k=768 --target vulkan 2>&1 | grep -E "config|rule|median" | tee $OUT/qkv-rule-vk.txt
$W run --op matmul-f16 --shape m=128,n=768,k=3072 --target vulkan 2>&1 | grep -E "config|rule|median" | tee -a $OUT/qkv-rule-vk.txt
