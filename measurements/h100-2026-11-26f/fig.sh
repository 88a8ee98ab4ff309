#!/usr/bin/env bash
# The transformer figure after two K/V stages and base-2 scores in attention and the row
# rule's shallower trees: PyTorch (eager, one CUDA graph, torch.compile; SDPA flash) and
# weft in one `weft report` call — the attention op beside SDPA, the models on CUDA by the
# rule alone (no record) and on Vulkan with the model-tune records of 2026-11-26b. Then a
# short A/B of the row rule at batch 1 against ff32842 (`weft-old`).
W=.dev/bin/weft
OLD=.dev/bin/weft-old
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
{
for b in 1 8; do for s in 128 512; do
  timeout 120 python3 scripts/torch_models.py --models bert_base,gpt2 --batch $b --seq $s --dtypes f16 --compile 2>/dev/null >> $OUT/torch-report.jsonl
done; done
python3 scripts/torch_attention.py --seqs 128,512,2048 --heads 12 --dim 64 2>/dev/null >> $OUT/torch-report.jsonl
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
timeout 420 $W report --no-compile --ops attention-f16 --targets cuda --out $OUT/report \
  --models zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 \
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 --model-records .dev/records-vulkan.json \
  --model-iters 20 --baselines $OUT/torch-report.jsonl 2>&1 | tail -2
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
for m in bert_base gpt2; do
  for bs in "1 128" "1 512"; do
    set -- $bs
    for v in new old new old; do
      X=$W; [ $v = old ] && X=$OLD
      echo "$m b$1 s$2 $v: $(timeout 60 $X model bench zoo:$m --batch $1 --seq $2 --dtype f16 --targets cuda --no-kernels 2>&1 | sed -n 3p)"
    done
  done
done
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/fig.txt
