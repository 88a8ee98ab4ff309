#!/usr/bin/env bash
# Call 7 (eighteenth session): the Vulkan views rule's many-wave tiles (bin/weft) against c7f7c0b (bin/weft-base):
# the rule's picks timed at call 6's eleven shapes (--sample 0), models A/B on vulkan f16 at b8 and b1, then issue 59's
# corpus at batch 8 (cuda f16, vulkan f16, vulkan f32) with bin/weft.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; .dev/bin/weft-base --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
for m in inception_v3 googlenet resnet50 densenet121; do
  timeout 90 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 --models $m --json /tmp/b8-$m.json > /tmp/e8-$m.txt 2>&1 &
done
for m in inception_v3 googlenet resnet50 mobilenet_v2; do
  timeout 90 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 --models $m --json /tmp/b1-$m.json > /tmp/e1-$m.txt 2>&1 &
done
S8="n=8,c=32,h=147,w=147,k=64,r=3,s=3,stride=1,pad=1;n=8,c=80,h=73,w=73,k=192,r=3,s=3,stride=1,pad=0;n=8,c=48,h=35,w=35,k=64,r=5,s=5,stride=1,pad=2;n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1;n=8,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1"
S1="n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1;n=1,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1;n=1,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1;n=1,c=512,h=7,w=7,k=512,r=3,s=3,stride=1,pad=1;n=1,c=24,h=14,w=14,k=64,r=3,s=3,stride=1,pad=1"
timeout 100 $W sweep --op conv2d-f16 --target vulkan --sample 0 --budget-ms 4 --shapes "$S8;$S1" --json $OUT/vk-rule.json > $OUT/vk-rule.txt 2>&1
wait
echo "sweep+export $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { echo "== $1 $2 $3 $(timeout 60 .dev/bin/$3 model run $1 --target vulkan --dtype f16 --iters 50 --no-check 2>&1 | grep -E '^median|rror' | head -1)"; }
{
i=0
for f in "/tmp/ws8/inception_v3/model.onnx b8" "/tmp/ws8/resnet50/model.onnx b8" "/tmp/ws8/googlenet/model.onnx b8" "/tmp/ws8/densenet121/model.onnx b8" \
         "/tmp/ws1/inception_v3/model.onnx b1" "/tmp/ws1/googlenet/model.onnx b1" "/tmp/ws1/resnet50/model.onnx b1" "/tmp/ws1/mobilenet_v2/model.onnx b1"; do
  set -- $f; i=$((i+1))
  if [ $((i % 2)) = 1 ]; then r $1 $2 weft-base; r $1 $2 weft; r $1 $2 weft-base; else r $1 $2 weft; r $1 $2 weft-base; r $1 $2 weft; fi
done
echo "== check"; timeout 60 $W model check /tmp/ws8/inception_v3/model.onnx --target vulkan --dtype f16 2>&1 | tail -2
echo "a/b $(( $(date +%s) - T0 )) s"
} >> $OUT/runs.txt 2>&1
LEFT=$(( 585 - ($(date +%s) - T0) ))
timeout $LEFT python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 8 --no-torch \
  --weft-targets cuda:f16,vulkan:f16,vulkan:f32 --json $OUT/corpus-b8-weft.json > $OUT/corpus-b8-weft.txt 2>&1
echo "b8 rc=$? $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
[ -f $OUT/corpus-b8-weft.json ] || mv $OUT/corpus-b8-weft.json.partial $OUT/corpus-b8-weft.json 2>/dev/null
cat $OUT/runs.txt; cat $OUT/vk-rule.txt | cut -c1-120; grep -E '^(\| [a-z])' $OUT/corpus-b8-weft.txt | cut -c1-200
