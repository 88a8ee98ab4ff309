#!/usr/bin/env bash
# The transformer figure again after issue 28's clock settling, in one call: PyTorch (eager, one CUDA graph, torch.compile) at
# seq 128 and 512, batch 1 and 8, f16; then weft's rows (cuda, vulkan) beside them
# through `weft report --models ... --baselines`, added to a copy of docs/report.json.
W=.dev/bin/weft
python3 - <<'PY'
import json
recs = []
for m in ("bert_base", "gpt2"):
    recs.extend(json.load(open(f".dev/records-{m}.json")))
json.dump(recs, open("/tmp/records-both.json", "w"))
PY
start=$(date +%s)
for b in 1 8; do for s in 128 512; do
  timeout 120 python3 scripts/torch_models.py --models bert_base,gpt2 --batch $b --seq $s --dtypes f16 --compile 2>/dev/null >> $OUT/torch-report.jsonl
  echo "torch b=$b s=$s done at $(( $(date +%s) - start )) s"
done; done
cat $OUT/torch-report.jsonl
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
$W report --no-run --no-compile --out $OUT/report --models zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 \
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 --model-records /tmp/records-both.json \
  --model-iters 20 --baselines $OUT/torch-report.jsonl 2>&1 | tail -3
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
# Where BERT-base's Vulkan time goes, per kernel, after the settling.
$W model bench zoo:bert_base --seq 128 --dtype f16 --targets vulkan --records /tmp/records-both.json > $OUT/bert-vulkan-kernels.txt 2>&1
head -4 $OUT/bert-vulkan-kernels.txt
