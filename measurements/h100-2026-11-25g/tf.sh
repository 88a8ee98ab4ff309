#!/usr/bin/env bash
# BERT-base and GPT-2 after the row-reduction template and the batched products on the
# matmul templates (no tuning records), beside PyTorch in the same call.
export WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
for m in bert_base gpt2; do
  for dt in f16 f32; do
    echo "== $m seq 128 $dt cuda"
    $W model run zoo:$m --seq 128 --dtype $dt --target cuda --iters 20 2>&1 | grep -E "compiled|median|error"
  done
  echo "== $m seq 128 f16 vulkan"
  $W model run zoo:$m --seq 128 --dtype f16 --target vulkan --iters 20 2>&1 | grep -E "compiled|median|error"
done
echo "== bert_base per-kernel (f16)"
$W model bench zoo:bert_base --seq 128 --dtype f16 --targets cuda > $OUT/bert-bench.txt
head -60 $OUT/bert-bench.txt
echo "== gpt2 per-kernel (f16)"
$W model bench zoo:gpt2 --seq 128 --dtype f16 --targets cuda > $OUT/gpt2-bench.txt
echo "== PyTorch"
python3 scripts/torch_models.py --models bert_base,gpt2 --seq 128 --dtypes f16 --compile 2>&1 | grep -v Warning | tee $OUT/torch.jsonl
