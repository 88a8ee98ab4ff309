#!/usr/bin/env bash
# Call 5 (seventeenth session): the 128x64x32 mma.sync tile over views (WEFT_CONV_WIDE_MMA=1,
# kernels/src/matmul_f16/wide_views.rs) where the rule takes it at batch 8 — each such convolution of the corpus
# timed alone (the rule's pick without the switch against the tile, --fixed), then the models with such
# convolutions at batch 8, switch off and on in alternated rounds, and weft against ONNX Runtime with it on.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 \
  --models inception_v3,googlenet,resnet50 --json /tmp/b8a.json > /tmp/ea.txt 2>&1 &
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 \
  --models mobilenet_v2,densenet121 --json /tmp/b8b.json > /tmp/eb.txt 2>&1 &
TILE="mma=16,wm=2,wn=2,fm=4,fn=2,bk=32,g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0"
timeout 150 $W sweep --op conv2d-f16 --target cuda --sample 0 --budget-ms 4 --fixed "wide:$TILE" --json $OUT/wide-b8.json \
  --shapes "n=8,c=3,h=299,w=299,k=32,r=3,s=3,stride=2,pad=0;n=8,c=32,h=149,w=149,k=32,r=3,s=3,stride=1,pad=0;n=8,c=32,h=147,w=147,k=64,r=3,s=3,stride=1,pad=1;n=8,c=80,h=73,w=73,k=192,r=3,s=3,stride=1,pad=0;n=8,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3;n=8,c=64,h=56,w=56,k=192,r=3,s=3,stride=1,pad=1;n=8,c=3,h=224,w=224,k=32,r=3,s=3,stride=2,pad=1" \
  > $OUT/wide-b8.txt 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
wait
echo "exported $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { echo "== $1 $2 $(timeout 60 $W model run /tmp/ws8/$1/model.onnx --target cuda --dtype f16 --iters 50 --no-check 2>&1 | grep -E '^median' | head -1)"; }
for round in 1 2; do
  for m in inception_v3 googlenet resnet50 mobilenet_v2 densenet121; do
    if [ $round = 1 ]; then WEFT_CONV_WIDE_MMA=0 r $m off; WEFT_CONV_WIDE_MMA=1 r $m on
    else WEFT_CONV_WIDE_MMA=1 r $m on; WEFT_CONV_WIDE_MMA=0 r $m off; fi
  done
done >> $OUT/runs.txt 2>&1
echo "ab $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
for m in inception_v3 googlenet; do
  echo "== check $m b8 on"; WEFT_CONV_WIDE_MMA=1 timeout 60 $W model check /tmp/ws8/$m/model.onnx --inputs /tmp/ws8/$m/in --target cuda --dtype f16 2>&1 | tail -3
done >> $OUT/runs.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
grep -E "^\||rule|wide" $OUT/wide-b8.txt | cut -c1-220 | head -40
cat $OUT/runs.txt
