#!/usr/bin/env bash
# Call 6 (twenty-second session): the Vulkan f16 column of issue 59's corpus with main's binary
# (e80c15e), weft alone, batch 1 then batch 8: the figures of the Vulkan >= 0.5x CUDA point.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version.txt
timeout 200 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 1 --no-torch --work /tmp/ws1 \
  --weft-targets vulkan:f16 --json $OUT/corpus-b1-vk.json > $OUT/corpus-b1-vk.txt 2>&1
echo "b1 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b1-vk.json ] || mv $OUT/corpus-b1-vk.json.partial $OUT/corpus-b1-vk.json 2>/dev/null
grep -E '^(\| [a-z])' $OUT/corpus-b1-vk.txt | cut -c1-200
timeout 220 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 8 --no-torch \
  --weft-targets vulkan:f16 --json $OUT/corpus-b8-vk.json > $OUT/corpus-b8-vk.txt 2>&1
echo "b8 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b8-vk.json ] || mv $OUT/corpus-b8-vk.json.partial $OUT/corpus-b8-vk.json 2>/dev/null
grep -E '^(\| [a-z])' $OUT/corpus-b8-vk.txt | cut -c1-200
gzip -9 $OUT/corpus-b1-vk.txt $OUT/corpus-b8-vk.txt 2>/dev/null
