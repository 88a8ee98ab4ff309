#!/usr/bin/env bash
# 2026-11-27h, call 6 (main e43c7c7, the gate at 400 tiles): ResNet-50 b8 f16 on CUDA,
# old (main 1679310) and new alternating; then its row of results.md again with PyTorch
# (eager, one CUDA graph, torch.compile) in the same call. The other CNN rows pick no
# gathered wgmma tile at this gate (`weft model graph ... --target "cuda -arch=sm_90a"`:
# 0 anchors at ResNet-50 b1, Inception v3, MobileNet v2), so their rows stand.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
{
for r in 1 2 3; do for b in old new; do
  bin=.dev/bin/weft; [ $b = old ] && bin=.dev/bin/weft-old
  echo "resnet50 b8 f16 $b: $(timeout 60 $bin model run zoo:resnet50 --batch 8 --dtype f16 --target cuda 2>&1 | grep -E '^(median|error|replayed)' | tr -s ' ' | tr '\n' ' ')"
done; done
} > $OUT/models-final.txt 2>&1; cut -c1-200 $OUT/models-final.txt
echo "models at $(( $(date +%s) - start )) s"
{
timeout 150 python3 scripts/torch_models.py --models resnet50 --batch 8 --dtypes f16 --compile 2>/dev/null >> $OUT/torch-b8.jsonl
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
timeout 150 .dev/bin/weft report --no-compile --no-run --out $OUT/report \
  --models zoo:resnet50@8 --model-targets cuda --model-dtypes f16 \
  --model-iters 20 --baselines $OUT/torch-b8.jsonl 2>&1 | tail -3
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
} 2>&1 | tee $OUT/b8-fig.txt
