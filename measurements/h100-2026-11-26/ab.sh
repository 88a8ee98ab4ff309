#!/usr/bin/env bash
# One call: fused attention against --disable-pass attention (BERT-base, GPT-2; f16,
# seq 128, the matmul records of 2026-11-25g), the attention op beside SDPA (flash, in
# a CUDA graph), then the model rows of `weft report` (seq 128 and 512, batch 1 and 8,
# cuda and vulkan) added to a copy of docs/report.json.
W=.dev/bin/weft
python3 - <<'PY'
import json
recs = []
for m in ("bert_base", "gpt2"):
    d = json.load(open(f".dev/records-{m}.json"))
    recs.extend(d["records"] if isinstance(d, dict) else d)
d = json.load(open(".dev/records-bert_base.json"))
if isinstance(d, dict):
    d["records"] = recs
else:
    d = recs
json.dump(d, open("/tmp/records-both.json", "w"))
PY
for m in bert_base gpt2; do
  for flag in "" "--disable-pass attention" ""; do
    echo "== $m f16 cuda $flag"
    WEFT_RECORDS=/tmp/records-both.json $W model run zoo:$m --seq 128 --dtype f16 --target cuda --iters 50 $flag 2>&1 | grep -E "compiled|median|error"
  done
done
echo "== op"
$W bench --ops attention-f16 --targets cuda --json $OUT/attn-bench.json 2>&1 | grep -vE "^\s+default|no tuning" | tail -8
python3 .dev/torch_attention.py 2>/dev/null | tee $OUT/sdpa.jsonl
echo "== report"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
$W report --no-run --no-compile --out $OUT/report --models zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 \
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 --model-records /tmp/records-both.json --model-iters 20 2>&1 | tail -5
