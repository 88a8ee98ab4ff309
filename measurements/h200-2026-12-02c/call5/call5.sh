#!/usr/bin/env bash
# Call 5 (twenty-second session): issue 59's CUDA figures again with main's binary (e80c15e: every
# change since the seventeenth session's call 1, 02cdf69, among them the 128x64x32 tile over views at
# >= 400 blocks on Hopper): all 15 corpus models at batch 8, then batch 1, each one speed.py --hold run
# (PyTorch eager, one CUDA graph, torch.compile and weft cuda f16 in this call), files straight to $OUT.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version.txt
timeout 265 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 8 --hold --hold-timeout 230 \
  --weft-targets cuda:f16 --json $OUT/corpus-b8.json > $OUT/corpus-b8.txt 2>&1
echo "b8 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b8.json ] || mv $OUT/corpus-b8.json.partial $OUT/corpus-b8.json 2>/dev/null
grep -E '^(\| [a-z]|Geometric)' $OUT/corpus-b8.txt | cut -c1-200
timeout 255 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 1 --hold --hold-timeout 220 --work /tmp/ws1 \
  --weft-targets cuda:f16 --json $OUT/corpus-b1.json > $OUT/corpus-b1.txt 2>&1
echo "b1 rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b1.json ] || mv $OUT/corpus-b1.json.partial $OUT/corpus-b1.json 2>/dev/null
grep -E '^(\| [a-z]|Geometric)' $OUT/corpus-b1.txt | cut -c1-200
gzip -9 $OUT/corpus-b8.txt $OUT/corpus-b1.txt 2>/dev/null
