# Call 2: batch 8, the two changes A/B on whole models (one binary; knobs): 1×1 convolutions read as
# stored products (WEFT_CONV1X1) and NHWC global pools in two reductions (WEFT_POOL_SPLIT), both
# off (base) against both on (new), two alternated rounds (the second over the five models below torch.compile); the depthwise template for 3×3/5×5
# windows (WEFT_DW_MIN_WINDOW=3, a knob of this binary only) on the models with depthwise layers;
# then weft against ONNX Runtime (`weft model check`) on EfficientNet-B0 and ResNet-50 with the new paths.
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
M=resnet50,resnext50_32x4d,inception_v3,efficientnet_b0,convnext_tiny,googlenet,mobilenet_v2,regnet_y_400mf,densenet121,shufflenet_v2
TIMEOUT=200 bash scripts/device-run.sh run b8-export python3 scripts/speed.py --dry-run --no-torch \
  --batch 8 --work /tmp/ws8 --models $M --json $OUT/b8-export.json > $OUT/export.txt 2>&1
W=.dev/bin/weft
r() { echo "== $1 $2"; shift 2; timeout 60 "$@" --target cuda --dtype f16 --iters 50 --no-check 2>&1 | grep -E "^median|^compiled"; }
for round in 1 2; do
  ms="resnet50 resnext50_32x4d inception_v3 efficientnet_b0 convnext_tiny"
  [ $round = 1 ] && ms="$ms googlenet mobilenet_v2 regnet_y_400mf densenet121 shufflenet_v2"
  for m in $ms; do
    WEFT_CONV1X1=0 WEFT_POOL_SPLIT=0 r $m base $W model run /tmp/ws8/$m/model.onnx
    r $m new $W model run /tmp/ws8/$m/model.onnx
  done
done > $OUT/ab8.txt 2>&1
for m in efficientnet_b0 mobilenet_v2 shufflenet_v2; do
  WEFT_DW_MIN_WINDOW=3 r $m new+dw3 $W model run /tmp/ws8/$m/model.onnx
  r $m new $W model run /tmp/ws8/$m/model.onnx
done > $OUT/dw8.txt 2>&1
for m in efficientnet_b0 resnet50; do
  echo "== check $m"; timeout 120 $W model check /tmp/ws8/$m/model.onnx --inputs /tmp/ws8/$m/in --target cuda --dtype f16 2>&1 | tail -4
done > $OUT/check8.txt 2>&1
$W model bench /tmp/ws8/efficientnet_b0/model.onnx --targets cuda --dtype f16 > $OUT/bench8-efficientnet_b0.txt 2>&1
$W model bench /tmp/ws8/resnet50/model.onnx --targets cuda --dtype f16 > $OUT/bench8-resnet50.txt 2>&1
tar czf $OUT/call2.tgz -C $OUT ab8.txt dw8.txt check8.txt bench8-efficientnet_b0.txt bench8-resnet50.txt export.txt setup.txt
rm -f $OUT/ab8.txt $OUT/dw8.txt $OUT/check8.txt $OUT/bench8-*.txt
cat $OUT/*.txt | tail -5; tar xzOf $OUT/call2.tgz ab8.txt | head -80
