#!/usr/bin/env bash
# GPT-2 untuned → tuned (tuned.sh), then both models with their records beside PyTorch
# eager, one CUDA graph and torch.compile, in this one call.
bash .dev/tuned.sh gpt2
for m in bert_base gpt2; do
  R=.dev/records-$m.json; [ -f $R ] || R=$OUT/records-$m.json
  echo "== $m seq 128 f16 cuda, tuned (same call as PyTorch)"
  WEFT_RECORDS=$R .dev/bin/weft model run zoo:$m --seq 128 --dtype f16 --target cuda --iters 20 2>&1 | grep -E "median|error"
done
echo "== PyTorch"
python3 scripts/torch_models.py --models bert_base,gpt2 --seq 128 --dtypes f16 --compile 2>/dev/null | tee $OUT/torch-same-call.jsonl
