#!/usr/bin/env bash
# Prepared 2026-11-28, not yet run: attention on Vulkan with one shared K/V tile (`kv` = 1,
# V loaded over K while the softmax runs), which lets 16 rows and four warps take all 128
# keys of BERT's and GPT-2's 128-token attention in one step (48 KiB). Predicted: one step
# instead of two saves one output round trip through shared memory and two barriers —
# 12 heads × 128 from 8.0 µs (the rule, 2026-11-28) to about 6.5; if so, the rule takes
# it where one step of 128 holds every key. Every config of the space with and without
# `kv` at the six shapes, the rule beside. About a minute. Carry .gl and .dev.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_RUNTIME_DIR=/tmp
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
S="bh=12,s=128,t=128,d=64,causal=0;bh=12,s=128,t=128,d=64,causal=1;bh=96,s=128,t=128,d=64,causal=1;bh=12,s=512,t=512,d=64,causal=1;bh=96,s=512,t=512,d=64,causal=0"
timeout 400 .dev/bin/weft sweep --op attention-f16 --target vulkan --shapes "$S" --sample 400 --trials --budget-ms 10 \
  --json $OUT/attn-kv.json > $OUT/attn-kv.txt 2>&1; echo "rc=$?"
grep -vE "^weft:" $OUT/attn-kv.txt | tail -8
