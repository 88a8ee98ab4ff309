#!/usr/bin/env bash
# Prepared for the next session (not yet run): the CNN rows of results.md again with PDL
# and the untested loads (the rows on the page are older runs): PyTorch (eager, one CUDA
# graph, torch.compile) and weft by the rule (no records) on CUDA and Vulkan, fp32 and
# fp16, in one `weft report` call. About 6-8 minutes (the transformer call took 353 s).
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
{
for b in 1 8; do
  m=resnet50; [ $b = 1 ] && m=resnet50,inception_v3,mobilenet_v2
  timeout 200 python3 scripts/torch_models.py --models $m --batch $b --dtypes f32,f16 --compile 2>/dev/null >> $OUT/torch-cnn.jsonl
done
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
timeout 300 .dev/bin/weft report --no-compile --no-run --out $OUT/report \
  --models zoo:resnet50,zoo:resnet50@8,zoo:inception_v3,zoo:mobilenet_v2 \
  --model-targets cuda,vulkan --model-dtypes f32,f16 \
  --model-iters 20 --baselines $OUT/torch-cnn.jsonl 2>&1 | tail -3
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
} 2>&1 | tee $OUT/cnn-fig.txt
