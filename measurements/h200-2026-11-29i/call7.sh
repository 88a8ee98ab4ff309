#!/usr/bin/env bash
# Call 7 (ninth session): issue 59 at batch 1 in one speed.py --hold run with the grouped filters
# stored RSCK (8d3fce5); ResNeXt-50/RegNetY A/B against 77ace40 (bin/weft-base) at batch 1 and 8,
# f16 and f32; checks; narrow (16-wide) tiles for the grouped products, fixed configs.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft; B=.dev/bin/weft-base
mkdir -p /tmp/o
{ $W --version; $B --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > /tmp/o/version7.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 320 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 1 --hold --hold-timeout 260 \
  --weft-targets cuda:f16 --json /tmp/o/corpus-b1.json > /tmp/o/corpus-b1.txt 2>&1
echo "b1 rc=$? $(( $(date +%s) - T0 )) s"
[ -f /tmp/o/corpus-b1.json ] || mv /tmp/o/corpus-b1.json.partial /tmp/o/corpus-b1.json 2>/dev/null
grep -E '^(prepared|PyTorch|\| [a-z]|Geometric)' /tmp/o/corpus-b1.txt | cut -c1-200
timeout 100 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 \
  --models resnext50_32x4d,regnet_y_400mf --json /tmp/exp8.json > /tmp/exp8.txt 2>&1
for r in 1 2; do for m in resnext50_32x4d regnet_y_400mf; do for bin in weft-base weft; do
  for spec in "/tmp/weft-speed/$m/model.onnx f16 b1" "/tmp/ws8/$m/model.onnx f16 b8" "/tmp/weft-speed/$m/model.onnx f32 b1"; do
    set -- $spec
    echo "$r $m $bin $2 $3 $(timeout 60 .dev/bin/$bin model bench $1 --targets cuda --dtype $2 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"
  done; done; done; done | tee /tmp/o/ab.txt
echo "ab $(( $(date +%s) - T0 )) s"
for m in resnext50_32x4d regnet_y_400mf; do for td in cuda:f16 cuda:f32 vulkan:f16; do
  echo "$m $td $(timeout 60 $W model run /tmp/weft-speed/$m/model.onnx --target ${td%%:*} --dtype ${td##*:} 2>&1 | grep -iE 'check|error|wrong' | head -2 | tr '\n' ' ')"
done; done | tee /tmp/o/checks.txt
echo "checks $(( $(date +%s) - T0 )) s"
C="g=8,vec=8,cp=0,st=2,fb=1,cc=0,wg=0"
FX="w41f21k32:mma=16,wm=4,wn=1,fm=2,fn=1,bk=32,$C;w41f21k16:mma=16,wm=4,wn=1,fm=2,fn=1,bk=16,$C;w41f41k32:mma=16,wm=4,wn=1,fm=4,fn=1,bk=32,$C;w81f21k32:mma=16,wm=8,wn=1,fm=2,fn=1,bk=32,$C;w41f11k32:mma=16,wm=4,wn=1,fm=1,fn=1,bk=32,$C;w21f41k32:mma=16,wm=2,wn=1,fm=4,fn=1,bk=32,$C;w42f21k32:mma=16,wm=4,wn=2,fm=2,fn=1,bk=32,$C"
left=$(( 540 - ($(date +%s) - T0) ))
[ $left -gt 30 ] && timeout $left $W sweep --op grouped-conv2d-f16 --target cuda --sample 0 --budget-ms 6 --fixed "$FX" \
  --shapes "n=8,c=128,h=56,w=56,k=128,r=3,s=3,stride=1,pad=1,g=32;n=8,c=256,h=28,w=28,k=256,r=3,s=3,stride=1,pad=1,g=32;n=8,c=512,h=14,w=14,k=512,r=3,s=3,stride=1,pad=1,g=32;n=1,c=128,h=56,w=56,k=128,r=3,s=3,stride=1,pad=1,g=32;n=1,c=256,h=28,w=28,k=256,r=3,s=3,stride=1,pad=1,g=32;n=8,c=104,h=28,w=28,k=104,r=3,s=3,stride=1,pad=1,g=13" \
  --json /tmp/o/narrow.json > /tmp/o/narrow.txt 2>&1
echo "sweep rc=$? $(( $(date +%s) - T0 )) s"; grep -vE "^weft:" /tmp/o/narrow.txt | tail -30 | cut -c1-250
tar czf $OUT/call7.tgz -C /tmp o
echo "done $(( $(date +%s) - T0 )) s"
