#!/usr/bin/env bash
# The transformer figure with attention in registers (and wgmma anchors, as 2026-11-26d):
# wgmma, attention's context stored [b, s, h, d]): CUDA by the rule alone (no record),
# Vulkan with its model-tune records of 2026-11-26b (batch 1, seq 128; products over
# stored operands take the record of the same product over views); PyTorch (eager, one
# CUDA graph, torch.compile) in the same call. Then each model's per-kernel table.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
for b in 1 8; do for s in 128 512; do
  timeout 120 python3 scripts/torch_models.py --models bert_base,gpt2 --batch $b --seq $s --dtypes f16 --compile 2>/dev/null >> $OUT/torch-report.jsonl
done; done
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
timeout 330 $W report --no-run --no-compile --out $OUT/report --models zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 \
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 --model-records .dev/records-vulkan.json \
  --model-iters 20 --baselines $OUT/torch-report.jsonl 2>&1 | tail -1
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
for m in bert_base gpt2; do
  timeout 60 $W model bench zoo:$m --seq 128 --dtype f16 --targets cuda >> $OUT/kernels.txt 2>&1
done
echo "kernels done at $(( $(date +%s) - start )) s"
echo "done at $(( $(date +%s) - start )) s"
