#!/usr/bin/env bash
# Call 5 (2026-11-28c, main 84721ac: two fragment sets over one k sub-step on Vulkan where the rule picks such a tile): issue 27's
# transformer rows again — PyTorch (eager, one CUDA graph,
# torch.compile) and weft by the rule (no records) on CUDA and Vulkan in one
# `weft report` call, BERT-base and GPT-2 at batch 1 and 8, 128 and 512 tokens, f16.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
{
for b in 1 8; do for s in 128 512; do
  timeout 120 python3 scripts/torch_models.py --models bert_base,gpt2 --batch $b --seq $s --dtypes f16 --compile 2>/dev/null >> $OUT/torch-report.jsonl
done; done
echo "torch done at $(( $(date +%s) - start )) s"
mkdir -p /tmp/r/report && cp docs/report.json /tmp/r/report/
timeout 300 .dev/bin/weft report --no-compile --no-run --out /tmp/r/report \
  --models zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 \
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 \
  --model-iters 20 --baselines $OUT/torch-report.jsonl 2>&1 | tail -3
echo "report done at $(( $(date +%s) - start )) s"
cp /tmp/r/report/report.json $OUT/report.json; cp /tmp/r/report/results.md $OUT/results.md
} 2>&1 | tee $OUT/fig.txt
grep -E "^- f16 \(NVIDIA H200\)" $OUT/results.md | grep -E "Vulkan|compile" | head -20
# Where BERT-base's time goes at 512 tokens, batch 1, by the rule, on both targets.
timeout 150 .dev/bin/weft model bench zoo:bert_base --seq 512 --dtype f16 --targets cuda,vulkan --iters 20 > $OUT/bert-b1-512-kernels.txt 2>&1
echo "kernels rc=$?"; grep -E "^(cuda|vulkan) " $OUT/bert-b1-512-kernels.txt
