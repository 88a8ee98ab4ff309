#!/usr/bin/env bash
# The transformer figure after the fp16 rule's tensor-core cost model (wgmma for the
# small-M products): CUDA by the rule alone (no record), Vulkan with its model-tune
# records of 2026-11-26b (batch 1, seq 128); PyTorch (eager, one CUDA graph,
# torch.compile) in the same call. Also the new rule on Vulkan (block-count rule again
# on element-wise-copy targets) at the six shapes of sweeps.sh.
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
S="m=128,n=2304,k=768;m=128,n=768,k=768;m=128,n=3072,k=768;m=128,n=768,k=3072;m=1024,n=1024,k=1024;m=4096,n=4096,k=4096"
timeout 60 $W sweep --op matmul-f16 --target vulkan --shapes "$S" --sample 0 --json $OUT/rule-vulkan.json > $OUT/rule-vulkan.txt 2>&1
echo "vulkan rule at $(( $(date +%s) - start )) s"; tail -7 $OUT/rule-vulkan.txt
for m in bert_base gpt2; do
  timeout 60 $W model bench zoo:$m --seq 128 --dtype f16 --targets cuda > $OUT/$m-cuda-rule.txt 2>&1
  timeout 60 $W model bench zoo:$m --seq 128 --dtype f16 --targets cuda --records .dev/records-all.json > $OUT/$m-cuda-records.txt 2>&1
  echo "$m: rule / old records"; sed -n 3p $OUT/$m-cuda-rule.txt; sed -n 3p $OUT/$m-cuda-records.txt
done
echo "benches at $(( $(date +%s) - start )) s"
for b in 1 8; do for s in 128 512; do
  timeout 120 python3 scripts/torch_models.py --models bert_base,gpt2 --batch $b --seq $s --dtypes f16 --compile 2>/dev/null >> $OUT/torch-report.jsonl
done; done
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
timeout 300 $W report --no-run --no-compile --out $OUT/report --models zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 \
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 --model-records .dev/records-vulkan.json \
  --model-iters 20 --baselines $OUT/torch-report.jsonl 2>&1 | tail -1
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
