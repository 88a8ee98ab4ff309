#!/usr/bin/env bash
# tanh.approx in f16 epilogues and the wgmma staging tile over the stages (2026-11-27):
# 1. the products with each candidate tile forced on every anchor (GPT-2, per-kernel
#    times), to see which tile the rule should take now that 128x128 in 3 stages fits
#    two blocks a multiprocessor and 128x256 with two warpgroups fits at all;
# 2. BERT-base and GPT-2 by the rule, new against old (24055bd), alternating.
NEW=.dev/bin/weft
OLD=.dev/bin/weft-old
D=measurements/h100-2026-11-27
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
{
declare -A CFG=(
  [w1_128x128_s4]="mma=16,wm=4,wn=1,fm=2,fn=8,bk=64,g=8,vec=8,cp=0,st=4,fb=1,cc=0,wg=1"
  [w1_128x128_s3]="mma=16,wm=4,wn=1,fm=2,fn=8,bk=64,g=8,vec=8,cp=0,st=3,fb=1,cc=0,wg=1"
  [w2_128x128_s3]="mma=16,wm=8,wn=1,fm=1,fn=8,bk=64,g=8,vec=8,cp=0,st=3,fb=1,cc=0,wg=2"
  [w2_128x256_s4]="mma=16,wm=8,wn=1,fm=1,fn=16,bk=64,g=8,vec=8,cp=0,st=4,fb=1,cc=0,wg=2"
  [w2_128x256_s3]="mma=16,wm=8,wn=1,fm=1,fn=16,bk=64,g=8,vec=8,cp=0,st=3,fb=1,cc=0,wg=2"
  [w1_64x128_s4]="mma=16,wm=4,wn=1,fm=1,fn=8,bk=64,g=8,vec=8,cp=0,st=4,fb=1,cc=0,wg=1"
)
for bs in "8 512" "8 128" "1 128"; do
  set -- $bs
  for name in "${!CFG[@]}"; do
    python3 $D/force.py $(( $1 * $2 )) "${CFG[$name]}" /tmp/force.json
    WEFT_RECORDS=/tmp/force.json timeout 60 $NEW model bench zoo:gpt2 --batch $1 --seq $2 --dtype f16 --targets cuda > /tmp/k.txt 2>&1
    echo "gpt2 b$1 s$2 $name: $(sed -n 3p /tmp/k.txt | awk '{print $10, $11}') | $(for a in attn.c_attn attn.c_proj mlp.c_fc mlp.c_proj; do grep "h.5.$a.matmul" /tmp/k.txt | grep -oE '[0-9.]+ us +[0-9.]+%' | head -1 | awk '{print $1}'; done | tr '\n' ' ')"
  done
  timeout 60 $NEW model bench zoo:gpt2 --batch $1 --seq $2 --dtype f16 --targets cuda > $OUT/kernels-gpt2-b$1-s$2.txt 2>&1
  echo "gpt2 b$1 s$2 rule: $(sed -n 3p $OUT/kernels-gpt2-b$1-s$2.txt | awk '{print $10, $11}') | $(for a in attn.c_attn attn.c_proj mlp.c_fc mlp.c_proj; do grep "h.5.$a.matmul" $OUT/kernels-gpt2-b$1-s$2.txt | grep -oE '[0-9.]+ us +[0-9.]+%' | head -1 | awk '{print $1}'; done | tr '\n' ' ')"
done
echo "forced at $(( $(date +%s) - start )) s"
for m in gpt2 bert_base; do
  for bs in "8 512" "8 128" "1 128" "1 512"; do
    set -- $bs
    for v in new old new old; do
      W=$NEW; [ $v = old ] && W=$OLD
      echo "$m b$1 s$2 $v: $(timeout 60 $W model bench zoo:$m --batch $1 --seq $2 --dtype f16 --targets cuda --no-kernels 2>&1 | sed -n 3p)"
    done
  done
done
echo "done at $(( $(date +%s) - start )) s"
} 2>&1 | tee $OUT/ab.txt
