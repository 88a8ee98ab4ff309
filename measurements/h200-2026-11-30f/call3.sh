# Call 3: batch 1, the same A/B (both changes off against on; one round) over the ten CNNs: what the
# batch-8 gains cost at batch 1; per-kernel tables at batch 8 with and without the depthwise template
# at 3×3/5×5 windows (WEFT_DW_MIN_WINDOW=3) for the three models with such layers; ResNet-50 batch 8
# against ONNX Runtime with both changes off (call 2 checked them on: 2.44e-2).
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
M=resnet50,resnext50_32x4d,inception_v3,efficientnet_b0,convnext_tiny,googlenet,mobilenet_v2,regnet_y_400mf,densenet121,shufflenet_v2
TIMEOUT=200 bash scripts/device-run.sh run b1-export python3 scripts/speed.py --dry-run --no-torch \
  --batch 1 --work /tmp/ws1 --models $M --json $OUT/b1-export.json > $OUT/export1.txt 2>&1 &
TIMEOUT=200 bash scripts/device-run.sh run b8-export python3 scripts/speed.py --dry-run --no-torch \
  --batch 8 --work /tmp/ws8 --models resnet50,efficientnet_b0,mobilenet_v2,shufflenet_v2 --json $OUT/b8-export.json > $OUT/export8.txt 2>&1 &
wait
W=.dev/bin/weft
r() { echo "== $1 $2"; shift 2; timeout 60 "$@" --target cuda --dtype f16 --iters 50 --no-check 2>&1 | grep -E "^median|^compiled"; }
for m in resnet50 resnext50_32x4d inception_v3 efficientnet_b0 convnext_tiny googlenet mobilenet_v2 regnet_y_400mf densenet121 shufflenet_v2; do
  WEFT_CONV1X1=0 WEFT_POOL_SPLIT=0 r $m base $W model run /tmp/ws1/$m/model.onnx
  r $m new $W model run /tmp/ws1/$m/model.onnx
  WEFT_CONV1X1=0 WEFT_POOL_SPLIT=0 r $m base $W model run /tmp/ws1/$m/model.onnx
  r $m new $W model run /tmp/ws1/$m/model.onnx
done > $OUT/ab1.txt 2>&1
for m in efficientnet_b0 mobilenet_v2 shufflenet_v2; do
  WEFT_DW_MIN_WINDOW=3 timeout 100 $W model bench /tmp/ws8/$m/model.onnx --targets cuda --dtype f16 > $OUT/bench8dw3-$m.txt 2>&1
  timeout 100 $W model bench /tmp/ws8/$m/model.onnx --targets cuda --dtype f16 > $OUT/bench8-$m.txt 2>&1
done
echo "== check resnet50 b8 base" > $OUT/check.txt
WEFT_CONV1X1=0 WEFT_POOL_SPLIT=0 timeout 120 $W model check /tmp/ws8/resnet50/model.onnx --inputs /tmp/ws8/resnet50/in --target cuda --dtype f16 2>&1 | tail -3 >> $OUT/check.txt
cd $OUT && tar czf call3.tgz ab1.txt check.txt bench8*.txt export1.txt export8.txt setup.txt && rm -f ab1.txt check.txt bench8*.txt
tar xzOf call3.tgz ab1.txt | grep -v compiled; tar xzOf call3.tgz check.txt
