#!/usr/bin/env bash
# Call 3 (2026-11-28, main e562729: attention's warps sharing rows in the Vulkan rule):
# the transformer rows of results.md — PyTorch (eager, one CUDA graph, torch.compile) and
# weft by the rule (no records) on CUDA and Vulkan in one `weft report` call; then the
# attention space on Vulkan against the new rule, with GPT-2's batch 8 × 512.
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
timeout 200 .dev/bin/weft report --no-compile --no-run --out /tmp/r/report \
  --models zoo:bert_base,zoo:bert_base@8,zoo:gpt2,zoo:gpt2@8 \
  --model-targets cuda,vulkan --model-dtypes f16 --model-seq 128,512 \
  --model-iters 20 --baselines $OUT/torch-report.jsonl 2>&1 | tail -3
echo "report done at $(( $(date +%s) - start )) s"
cp /tmp/r/report/report.json $OUT/report.json; cp /tmp/r/report/results.md $OUT/results.md
S="bh=12,s=128,t=128,d=64,causal=0;bh=96,s=128,t=128,d=64,causal=1;bh=12,s=512,t=512,d=64,causal=1;bh=96,s=512,t=512,d=64,causal=0;bh=96,s=512,t=512,d=64,causal=1"
timeout $(( 560 - $(date +%s) + start )) .dev/bin/weft sweep --op attention-f16 --target vulkan --shapes "$S" --sample 400 --trials --budget-ms 10 \
  --json $OUT/attn-vk-rule.json > $OUT/attn-vk-rule.txt 2>&1; echo "sweep rc=$? at $(( $(date +%s) - start )) s"
grep -vE "^weft:" $OUT/attn-vk-rule.txt | tail -8
} 2>&1 | tee $OUT/fig.txt
grep -E "^- f16" $OUT/results.md | head -20
