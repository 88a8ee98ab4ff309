#!/usr/bin/env bash
# 2026-11-27h, call 3: the models with the conv rule that takes gathered wgmma tiles where
# a product has >= 196 64x64 tiles (ResNet-50 b8: 36 anchors; b1: 4; Inception v3: 3;
# MobileNet v2: 2). (1) old (main 1679310) and new binaries alternating, f16 on CUDA by
# the rule, each run checked against the float64 reference and replayed. (2) Per kernel
# (`weft model bench`) ResNet-50 b8 f16, old and new. (3) The f16 CUDA rows of the CNNs
# in results.md again, PyTorch (eager, one CUDA graph, torch.compile) in the same call
# (that report was discarded: its weft rows are of the gate at 196 tiles, since raised to
# 400 after calls 4-5; torch-cnn.jsonl and cnn-fig.txt are kept).
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
{
for m in "resnet50 --batch 8" "resnet50" "inception_v3" "mobilenet_v2"; do
  for r in 1 2; do for b in old new; do
    bin=.dev/bin/weft; [ $b = old ] && bin=.dev/bin/weft-old
    echo "$m f16 $b: $(timeout 60 $bin model run zoo:$m --dtype f16 --target cuda 2>&1 | grep -E '^(median|error|replayed)' | tr -s ' ' | tr '\n' ' ')"
  done; done
done
} > $OUT/models.txt 2>&1; cut -c1-230 $OUT/models.txt
echo "models at $(( $(date +%s) - start )) s"
for b in old new; do
  bin=.dev/bin/weft; [ $b = old ] && bin=.dev/bin/weft-old
  timeout 60 $bin model bench zoo:resnet50 --batch 8 --dtype f16 --targets cuda > $OUT/bench-resnet50b8-$b.txt 2>&1
done
echo "bench at $(( $(date +%s) - start )) s"
{
for b in 1 8; do
  m=resnet50; [ $b = 1 ] && m=resnet50,inception_v3,mobilenet_v2
  timeout 150 python3 scripts/torch_models.py --models $m --batch $b --dtypes f16 --compile 2>/dev/null >> $OUT/torch-cnn.jsonl
done
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
timeout 200 .dev/bin/weft report --no-compile --no-run --out $OUT/report \
  --models zoo:resnet50,zoo:resnet50@8,zoo:inception_v3,zoo:mobilenet_v2 \
  --model-targets cuda --model-dtypes f16 \
  --model-iters 20 --baselines $OUT/torch-cnn.jsonl 2>&1 | tail -3
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
} 2>&1 | tee $OUT/cnn-fig.txt
