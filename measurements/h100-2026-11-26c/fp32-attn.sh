#!/usr/bin/env bash
# After the tuner's timing fix: issue 26's fp32 figure again (the rule against a
# 48-config tuning and cuBLAS at the 60 `mixed` shapes), and the fused attention tuned
# again at 12 heads of 64, sequence 128/512/2048 (its 104 configs), beside PyTorch's
# scaled_dot_product_attention (flash) replayed in a CUDA graph.
export WEFT_RECORDS=/tmp/attn-records.json
W=.dev/bin/weft
start=$(date +%s)
timeout 330 $W sweep --op matmul --target cuda --shapes mixed --sample 48 --budget-ms 10 \
  --json $OUT/fp32-mixed.json > $OUT/fp32-mixed.txt 2>&1; echo "fp32 rc=$? at $(( $(date +%s) - start )) s"; tail -3 $OUT/fp32-mixed.txt
for s in 128 512 2048; do
  timeout 60 $W tune --op attention-f16 --shape bh=12,s=$s,t=$s,d=64,causal=0 --target cuda > $OUT/tune-attention-$s.txt 2>&1
  echo "attention $s rc=$? at $(( $(date +%s) - start )) s"; grep -E "^ *1 |rule" $OUT/tune-attention-$s.txt | head -3
done
timeout 90 python3 measurements/h100-2026-11-26/torch_attention.py 2>/dev/null | tee $OUT/sdpa.jsonl
echo "done at $(( $(date +%s) - start )) s"
