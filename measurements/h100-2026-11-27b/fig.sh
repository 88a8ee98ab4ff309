#!/usr/bin/env bash
# The transformer figure after the Vulkan-fitted fp16 rule, the later clock settling and
# the deeper splits: PyTorch (eager, one CUDA graph, torch.compile) and weft in one
# `weft report` call; the models by the rule alone (no record) on CUDA and on Vulkan.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export XDG_RUNTIME_DIR=/tmp
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
{
for b in 1 8; do for s in 128 512; do
  timeout 120 python3 scripts/torch_models.py --models bert_base,gpt2 --batch $b --seq $s --dtypes f16 --compile 2>/dev/null >> $OUT/torch-report.jsonl
done; done
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p $OUT/report && cp docs/report.json $OUT/report/
timeout 330 $W report --no-compile --no-run --out $OUT/report \
  --models zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 \
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 \
  --model-iters 20 --baselines $OUT/torch-report.jsonl 2>&1 | tail -3
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
} 2>&1 | tee $OUT/fig.txt
