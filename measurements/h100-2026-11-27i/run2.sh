#!/usr/bin/env bash
# 2026-11-27i, call 2 (main ac2d7d4 + the 96-row tile in the space and the rule):
#  1. the 96-row tile's configs (rm = 3: k steps of 8 and 16, every split the space
#     offers) at the 60 `mixed` shapes, every one timed (`--trials`): the data the
#     rule's new picks are checked on offline (`ops/tests/data/h100-matmul-rule-tiles.csv`);
#  2. the cubes 1984..2112 by the new rule beside the fixed configs and cuBLAS;
#  3. GPT-2 at 128/512 tokens, batch 1/8, f16, CUDA, beside PyTorch (call 1's figure
#     did not come back: at most 8 files return, so the report travels as one archive).
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
C2048="wm=2,wn=2,rm=2,rn=2,lm=4,ln=8,tm=8,tn=4,bk=8,g=8,mb=0"
start=$(date +%s)
timeout 200 $W sweep --op matmul --target cuda --shapes mixed --sample 64 --only rm=3 --trials --budget-ms 10 \
  --json $OUT/rm3-mixed.json > $OUT/rm3-mixed.txt 2>&1
echo "rm3 rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/rm3-mixed.txt | tail -3
timeout 150 $W sweep --op matmul --target cuda --shapes cubes:1984:2112 --sample 0 --budget-ms 10 \
  --fixed "default;tuned at 2048³:$C2048" --json $OUT/cubes.json > $OUT/cubes.txt 2>&1
echo "cubes rc=$? at $(( $(date +%s) - start )) s"; grep -vE "^weft:" $OUT/cubes.txt | tail -3
mkdir -p /tmp/g/report
for b in 1 8; do for s in 128 512; do
  timeout 100 python3 scripts/torch_models.py --models gpt2 --batch $b --seq $s --dtypes f16 --compile 2>/dev/null >> /tmp/g/torch-gpt2.jsonl
done; done
echo "torch done at $(( $(date +%s) - start )) s"
cp docs/report.json /tmp/g/report/
timeout 200 $W report --no-compile --no-run --out /tmp/g/report \
  --models zoo:gpt2,zoo:gpt2@8 --model-targets cuda --model-dtypes f16 --model-seq 128,512 \
  --model-iters 20 --baselines /tmp/g/torch-gpt2.jsonl 2>&1 | tail -2
echo "report done at $(( $(date +%s) - start )) s"
rm -rf /tmp/g/report/charts; tar czf $OUT/gpt2.tgz -C /tmp/g .
grep -E "^- f16|^\| weft|^\| PyTorch|^\| torch" /tmp/g/report/results.md | head -40
