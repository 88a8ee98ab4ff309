#!/usr/bin/env bash
# The transformer figure with each target tuned for itself (issue 28: "each tuned for
# its target"): BERT-base and GPT-2 (batch 1, seq 128, f16) tuned on Vulkan by
# `weft model tune` beside the CUDA records of 2026-11-25g, then PyTorch (eager, one CUDA
# graph, torch.compile) and weft's rows (cuda, vulkan) at seq 128 and 512, batch 1 and 8,
# through `weft report --models ... --baselines`, added to a copy of docs/report.json.
# Two calls: the tuning (records-all.json, tune-vulkan-*.txt) ran first, alone, as
#   for m in bert_base gpt2; do
#     $W model tune zoo:$m --seq 128 --dtype f16 --target vulkan --records /tmp/records-all.json
#   done
# since tuning, PyTorch and the report together ran past the call's 10 minutes.
W=.dev/bin/weft
cp .dev/records-all.json /tmp/records-all.json   # the first call's tuning
start=$(date +%s)
for b in 1 8; do for s in 128 512; do
  timeout 120 python3 scripts/torch_models.py --models bert_base,gpt2 --batch $b --seq $s --dtypes f16 --compile 2>/dev/null >> $OUT/torch-report.jsonl
done; done
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
$W report --no-run --no-compile --out $OUT/report --models zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 \
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 --model-records /tmp/records-all.json \
  --model-iters 20 --baselines $OUT/torch-report.jsonl 2>&1 | tail -1
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
$W model bench zoo:bert_base --seq 128 --dtype f16 --targets vulkan --records /tmp/records-all.json > $OUT/bert-vulkan-kernels-tuned.txt 2>&1
head -4 $OUT/bert-vulkan-kernels-tuned.txt
