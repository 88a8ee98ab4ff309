#!/usr/bin/env bash
# Call 2 (sixteenth session): windowed pools over NHWC images a vector of channels a thread (WEFT_POOL_VEC),
# A/B by knob in one binary on the models with windowed pools (batch 8: Inception-v3, GoogLeNet, DenseNet-121,
# ResNet-50; batch 1: Inception-v3, GoogLeNet), two alternated rounds; weft against ONNX Runtime on Inception-v3
# and DenseNet-121 at batch 8 with the vector pools; Inception-v3's per-kernel table at batch 8; then the zoo
# rows of issue 59's zoo-against-export check (`corpus zoo`).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/runs.txt
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 8 --work /tmp/ws8 \
  --models inception_v3,googlenet,densenet121,resnet50 --json $OUT/b8-export.json > $OUT/export.txt 2>&1 &
timeout 200 python3 scripts/speed.py --dry-run --no-torch --batch 1 --work /tmp/ws1 \
  --models inception_v3,googlenet --json $OUT/b1-export.json > $OUT/export1.txt 2>&1 &
wait
echo "exported $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
r() { echo "== $1 $2 $(timeout 60 $W model run $3 --target cuda --dtype f16 --iters 50 --no-check 2>&1 | grep -E '^median' | head -1)"; }
for round in 1 2; do
  for m in inception_v3 googlenet densenet121 resnet50; do
    WEFT_POOL_VEC=0 r $m b8-base /tmp/ws8/$m/model.onnx
    r $m b8-vec /tmp/ws8/$m/model.onnx
  done
  for m in inception_v3 googlenet; do
    WEFT_POOL_VEC=0 r $m b1-base /tmp/ws1/$m/model.onnx
    r $m b1-vec /tmp/ws1/$m/model.onnx
  done
done | tee -a $OUT/runs.txt
echo "ab $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
for m in inception_v3 densenet121; do
  echo "== check $m b8"; timeout 120 $W model check /tmp/ws8/$m/model.onnx --inputs /tmp/ws8/$m/in --target cuda --dtype f16 2>&1 | tail -4
done > $OUT/check8.txt 2>&1
timeout 120 $W model bench /tmp/ws8/inception_v3/model.onnx --targets cuda --dtype f16 > $OUT/bench8-inception_v3.txt 2>&1
WEFT_POOL_VEC=0 timeout 120 $W model bench /tmp/ws8/inception_v3/model.onnx --targets cuda --dtype f16 > $OUT/bench8-inception_v3-base.txt 2>&1
echo "bench $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
LIMIT=200 bash scripts/device-run.sh corpus zoo > $OUT/zoo-run.txt 2>&1
echo "done $(( $(date +%s) - T0 )) s" >> $OUT/runs.txt
tar czf $OUT/call2.tgz -C $OUT setup.txt export.txt export1.txt check8.txt bench8-inception_v3.txt bench8-inception_v3-base.txt zoo-run.txt b8-export.json b1-export.json 2>/dev/null
rm -f $OUT/setup.txt $OUT/export.txt $OUT/export1.txt $OUT/check8.txt $OUT/bench8-*.txt $OUT/zoo-run.txt $OUT/b*-export.json
cat $OUT/runs.txt; tar xzOf $OUT/call2.tgz check8.txt
