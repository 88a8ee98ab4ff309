# Call 6: two A/Bs by knob in one binary (4220bc3 plus a measurement-only WEFT_GELU_RCP): (1) the erf
# GELU fused into an f16 product's stores with its one division replaced by rsqrt(y)² (=1 approximate
# reciprocal; binary16 outputs), on ConvNeXt-tiny, BERT-base and DistilBERT at batch 8 and 1; (2) the
# classifiers' 8-row products (1000 columns) on the config the sweep of call 5 found best
# (WEFT_GEMV=m=8,n=1000:threads=256,nt=1,unroll=4,shuffle=32), ResNet-50 and Inception-v3 at batch 8.
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
TIMEOUT=200 bash scripts/device-run.sh run b8-export python3 scripts/speed.py --dry-run --no-torch \
  --batch 8 --work /tmp/ws8 --models convnext_tiny,bert_base,distilbert,resnet50,inception_v3 --json $OUT/b8-export.json > $OUT/export8.txt 2>&1 &
TIMEOUT=200 bash scripts/device-run.sh run b1-export python3 scripts/speed.py --dry-run --no-torch \
  --batch 1 --work /tmp/ws1 --models convnext_tiny,bert_base --json $OUT/b1-export.json > $OUT/export1.txt 2>&1 &
wait
W=.dev/bin/weft
r() { echo "== $1 $2"; shift 2; timeout 60 "$@" --target cuda --dtype f16 --iters 50 --no-check 2>&1 | grep -E "^median"; }
for round in 1 2; do
  for d in ws8/convnext_tiny ws8/bert_base ws8/distilbert ws1/convnext_tiny ws1/bert_base; do
    r $d div $W model run /tmp/$d/model.onnx
    WEFT_GELU_RCP=1 r $d rcp $W model run /tmp/$d/model.onnx
  done
  for d in ws8/resnet50 ws8/inception_v3; do
    r $d rule $W model run /tmp/$d/model.onnx
    WEFT_GEMV="m=8,n=1000:threads=256,nt=1,unroll=4,shuffle=32" r $d nt1 $W model run /tmp/$d/model.onnx
  done
done > $OUT/ab6.txt 2>&1
for d in ws8/convnext_tiny ws8/bert_base; do
  echo "== check $d rcp"; WEFT_GELU_RCP=1 timeout 60 $W model check /tmp/$d/model.onnx --inputs /tmp/$d/in --target cuda --dtype f16 2>&1 | tail -3
  echo "== check $d div"; timeout 60 $W model check /tmp/$d/model.onnx --inputs /tmp/$d/in --target cuda --dtype f16 2>&1 | tail -3
done > $OUT/check6.txt 2>&1
WEFT_GELU_RCP=1 timeout 100 $W model bench /tmp/ws8/convnext_tiny/model.onnx --targets cuda --dtype f16 > $OUT/bench8rcp-convnext_tiny.txt 2>&1
cd $OUT && tar czf call6.tgz ab6.txt check6.txt bench8rcp-convnext_tiny.txt export8.txt export1.txt setup.txt && rm -f ab6.txt check6.txt bench8rcp-*.txt
tar xzOf call6.tgz ab6.txt; tar xzOf call6.tgz check6.txt
