#!/usr/bin/env bash
# Attention with S, P and O in registers (`rg` = 1, the rule's pick on CUDA): right on the
# H100 (the op against its float64 check, the models against the float64 reference), the op
# beside SDPA (flash) in the same call, the op's space tuned at 128, 512 and 2048 tokens
# (both forms), then weft against Hugging Face's own BertModel / GPT2Model (through ONNX).
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
for s in "bh=12,s=129,t=129,d=64,causal=1" "bh=3,s=100,t=100,d=80,causal=0" "bh=2,s=7,t=7,d=128,causal=1"; do
  echo "== run $s: $($W run --op attention-f16 --shape $s --target cuda 2>&1 | grep -iE 'error|config|rule' | tr '\n' ' ')"
done
for m in bert_base gpt2; do
  for bs in "1 128" "2 37"; do
    set -- $bs
    echo "== $m b$1 s$2: $(timeout 120 $W model run zoo:$m --batch $1 --seq $2 --dtype f16 --target cuda 2>&1 | grep -E '^(median|error)' | tr '\n' ' ')"
  done
done
echo "checks at $(( $(date +%s) - start )) s"
echo "== op by the rule"
$W bench --ops attention-f16 --targets cuda --json $OUT/attn-bench.json 2>&1 | tail -12
python3 scripts/torch_attention.py --seqs 128,512,2048 --heads 12 --dim 64 2>/dev/null | tee $OUT/sdpa.jsonl
echo "op at $(( $(date +%s) - start )) s"
for s in 128 512 2048; do
  for c in 0 1; do
    echo "== tune s=$s causal=$c"
    timeout 100 $W tune --op attention-f16 --shape bh=12,s=$s,t=$s,d=64,causal=$c --target cuda --no-save > $OUT/tune-$s-$c.txt 2>&1
    grep -iE "best|rule|default" $OUT/tune-$s-$c.txt | head -4
    sort -t'|' -k1 $OUT/tune-$s-$c.txt >/dev/null
  done
done
echo "tunes at $(( $(date +%s) - start )) s"
timeout 280 bash scripts/torch_check.sh
echo "done at $(( $(date +%s) - start )) s"
