#!/usr/bin/env bash
# Issue 28, second call: is BERT's whole-model Vulkan time (3.5x the sum of its kernels
# timed alone) the clocks? nvidia-smi logs every 20 ms beside three processes; then the
# slow-pipeline frequency over 12 more processes; then Vulkan's own best for BERT's
# QKV product and attention against the rule's picks.
P=.dev/bin/vulkan_probe
W=.dev/bin/weft
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,utilization.gpu,clocks_event_reasons.active --format=csv -lms 20 > $OUT/smi.csv 2>&1 &
smi=$!
stamp() { echo "## $(date +%H:%M:%S.%N) $*"; }
for rep in 1 2; do
  stamp "vulkan iters 20"; $W model bench zoo:bert_base --seq 128 --dtype f16 --targets vulkan --no-kernels --iters 20 --records .dev/records-bert_base.json 2>&1 | grep -E "^vulkan"
  stamp "vulkan iters 400"; $W model bench zoo:bert_base --seq 128 --dtype f16 --targets vulkan --no-kernels --iters 400 --records .dev/records-bert_base.json 2>&1 | grep -E "^vulkan"
  stamp "cuda,vulkan iters 20"; $W model bench zoo:bert_base --seq 128 --dtype f16 --targets cuda,vulkan --no-kernels --iters 20 --records .dev/records-bert_base.json 2>&1 | grep -E "^(vulkan|cuda)"
done > $OUT/bert-clocks.txt 2>&1
stamp "end" >> $OUT/bert-clocks.txt
kill $smi
cat $OUT/bert-clocks.txt
shape=n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1
for i in $(seq 1 12); do echo "## process $i"; $P slow conv2d-f16 $shape 2>&1; done > $OUT/slow2.txt
awk '/median/{print $5}' $OUT/slow2.txt | sort -n | awk '{a[NR]=$1} END{print "slow2 cells", NR, "min", a[1], "max", a[NR]}'
echo "== tune vulkan"
$W tune --op matmul-f16 --shape m=128,n=2304,k=768 --target vulkan --no-save 2>&1 | tail -8 | tee $OUT/tune-qkv-vk.txt
$W tune --op matmul-f16 --shape m=128,n=768,k=3072 --target vulkan --no-save 2>&1 | tail -8 | tee $OUT/tune-out-vk.txt
$W run --op attention-f16 --shape bh=12,s=128,t=128,d=64,causal=0 --target vulkan 2>&1 | tail -6 | tee $OUT/attn-vk.txt
$W tune --op attention-f16 --shape bh=12,s=128,t=128,d=64,causal=0 --target vulkan --no-save 2>&1 | tail -8 | tee -a $OUT/attn-vk.txt
