#!/usr/bin/env bash
# The transformer figure after the wgmma epilogue work (tanh.approx, the staging tile over
# three stages, the rule's new tiles): PyTorch (eager, one CUDA graph, torch.compile) and
# weft in one `weft report` call; the models on CUDA by the rule alone (no record) and on
# Vulkan with the model-tune records of 2026-11-26b.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export XDG_RUNTIME_DIR=/tmp
(cd .dev && tar xJf pack.tar.xz)
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
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 --model-records .dev/records-vulkan.json \
  --model-iters 20 --baselines $OUT/torch-report.jsonl 2>&1 | tail -3
echo "report done at $(( $(date +%s) - start )) s"
rm -rf $OUT/report/charts
} 2>&1 | tee $OUT/fig.txt
# The rule's 32-row floor for wgmma came after sweep.sh: its shapes below 32 rows again.
timeout 100 $W sweep --op matmul-f16 --target cuda --shapes "m=1,n=1000,k=2048;m=8,n=4096,k=4096;m=16,n=1024,k=4096;m=17,n=33,k=65" \
  --sample 48 --budget-ms 10 --trials --json $OUT/f16-small-m.json > $OUT/f16-small-m.txt 2>&1
tail -6 $OUT/f16-small-m.txt
echo "all done at $(( $(date +%s) - start )) s"
