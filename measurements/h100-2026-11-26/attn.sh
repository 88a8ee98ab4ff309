#!/usr/bin/env bash
# The fused attention on the H100: the op beside SDPA (flash), then BERT-base and GPT-2
# end to end with the matmul records of 2026-11-25g, beside PyTorch in the same call.
W=.dev/bin/weft
echo "== graph"
$W model graph zoo:gpt2 --seq 128 2>&1 | grep -E "after the passes|Attention" | head -3
echo "== op"
$W bench --ops attention-f16 --targets cuda --json $OUT/attn-bench.json 2>&1 | tail -12
python3 .dev/torch_attention.py 2>/dev/null | tee $OUT/sdpa.jsonl
for m in bert_base gpt2; do
  R=.dev/records-$m.json
  echo "== $m f16 cuda"
  WEFT_RECORDS=$R $W model run zoo:$m --seq 128 --dtype f16 --target cuda --iters 20 2>&1 | grep -E "compiled|median|error"
  WEFT_RECORDS=$R $W model bench zoo:$m --seq 128 --dtype f16 --targets cuda > $OUT/$m-bench.txt 2>&1
  head -3 $OUT/$m-bench.txt; grep -m2 Attention $OUT/$m-bench.txt | cut -c1-60,200-
  echo "== $m f32 cuda"
  WEFT_RECORDS=/tmp/none.json $W model run zoo:$m --seq 128 --target cuda --iters 10 2>&1 | grep -E "median|error"
done
echo "== PyTorch"
python3 scripts/torch_models.py --models bert_base,gpt2 --seq 128 --dtypes f16 --compile 2>/dev/null | tee $OUT/torch.jsonl
