#!/usr/bin/env bash
# Prepared 2026-11-28b, run 2026-11-28c (call 1, `run1.sh`): data for refitting the Vulkan fp16 cost model
# (`scripts/rule-f16-vulkan-fit.py`) with the configs it never saw — two fragment sets
# (`fb` = 2) and loads two k steps ahead (`pf` = 2) — at the transformer products of the
# rows still short of issue 27's 0.5x (BERT-base / GPT-2 at 512 tokens and batch 8: M =
# 512, 1024, 4096). Why: at 512 x 2304 x 768 the best config timed (128x128x32, two
# fragment sets, 20.0 us) is 0.85x faster than the rule's pick (23.6 us), which the model,
# fitted on one set only, does not rank (`../h100-2026-11-28b/ahead/f16-vk-512.txt`).
# Every config of the Vulkan space with `--trials`, about 4 minutes on an H200. Carry .gl
# and .dev (bin/weft at main). Then: add the JSON to the fit's SWEEPS, let the model's
# candidates include `fb` = 2 (and weigh `pf`), refit, A/B the models at 512 and batch 8.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
S=""
for m in 512 1024 4096; do
  for nk in "n=2304,k=768" "n=768,k=768" "n=3072,k=768" "n=768,k=3072"; do S="$S;m=$m,$nk"; done
done
timeout 500 .dev/bin/weft sweep --op matmul-f16 --target vulkan --shapes "${S#;}" --sample 1000 --trials --budget-ms 10 \
  --json $OUT/vk-refit.json > $OUT/vk-refit.txt 2>&1; echo "rc=$?"
grep -vE "^weft:" $OUT/vk-refit.txt | tail -14
