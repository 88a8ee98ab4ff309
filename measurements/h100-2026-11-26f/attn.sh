#!/usr/bin/env bash
# Attention with the next key tile fetched while this one computes (`st` = 2, cp.async) and
# scores in base 2 (`exp2`): right on the H100 (the op against its float64 check), the op by
# the rule beside SDPA (flash) twice in one call, the new space tuned at 512 and 2048
# tokens, then where the time goes at 2048 (ptxas, SASS counts, ncu).
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
{
for s in "bh=12,s=2048,t=2048,d=64,causal=0" "bh=12,s=129,t=129,d=64,causal=1" "bh=3,s=100,t=100,d=80,causal=0" "bh=2,s=700,t=700,d=128,causal=1"; do
  echo "== run $s: $($W run --op attention-f16 --shape $s --target cuda 2>&1 | grep -iE 'error|config|rule|within|max' | tr '\n' ' ')"
done
for m in bert_base gpt2; do
  echo "== $m b1 s128: $(timeout 120 $W model run zoo:$m --batch 1 --seq 128 --dtype f16 --target cuda 2>&1 | grep -E '^(median|error)' | tr '\n' ' ')"
done
echo "checks at $(( $(date +%s) - start )) s"
for i in 1 2; do
  $W bench --ops attention-f16 --targets cuda --json $OUT/attn-bench-$i.json 2>&1 | grep -E "on cuda:" | head -6
  python3 scripts/torch_attention.py --seqs 128,512,2048 --heads 12 --dim 64 2>&1 > $OUT/sdpa-$i.jsonl | tail -2
done
echo "op at $(( $(date +%s) - start )) s"
for s in 2048 512; do
  echo "== tune s=$s"
  timeout 170 $W tune --op attention-f16 --shape bh=12,s=$s,t=$s,d=64,causal=0 --target cuda --no-save > $OUT/tune-$s.txt 2>&1
  grep -E "^ *[0-9]+ " $OUT/tune-$s.txt | head -8
done
echo "tunes at $(( $(date +%s) - start )) s"
$W emit --op attention-f16 --shape bh=12,s=2048,t=2048,d=64,causal=0 --target cuda > /tmp/attn.cu 2>/dev/null
nvcc -arch=sm_90 -cubin -Xptxas -v -o /tmp/attn.cubin /tmp/attn.cu 2>&1 | grep -E "registers|spill" | head -4
cuobjdump -sass /tmp/attn.cubin > $OUT/attn-2048.sass 2>&1
echo "SASS: $(grep -c MUFU.EX2 $OUT/attn-2048.sass) MUFU.EX2, $(grep -c HMMA $OUT/attn-2048.sass) HMMA, $(grep -c LDSM $OUT/attn-2048.sass) LDSM, $(grep -c LDGSTS $OUT/attn-2048.sass) LDGSTS, $(grep -cE '^\s+/\*[0-9a-f]+\*/' $OUT/attn-2048.sass) instructions"
timeout 120 ncu --clock-control none -k regex:attention -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  $W run --op attention-f16 --shape bh=12,s=2048,t=2048,d=64,causal=0 --target cuda > $OUT/ncu-2048.txt 2>&1
grep -E "Duration|Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Stall|Issue Slots|Executed Ipc|Shared Memory|Block Limit" $OUT/ncu-2048.txt | head -40
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/attn.txt
