#!/usr/bin/env bash
# Call 2 of 2026-11-29 (eighth session): the corpus at batch 8 with PyTorch and weft's cuda f16 in one
# speed.py run (--hold: PyTorch's columns compiled in parallel workers, then every timing one at a
# time), then the zoo side of the zoo-against-export check (batch 1, cuda f16).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; [ -f $icd ] && export VK_DRIVER_FILES=$icd
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
{ $W --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version2.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 500 python3 scripts/speed.py --weft $W --jobs 16 --iters 20 --batch 8 --hold --hold-timeout 300 \
  --weft-targets cuda:f16 --json $OUT/corpus-b8.json > $OUT/corpus-b8.txt 2>&1
echo "speed rc=$? $(( $(date +%s) - T0 )) s"
[ -f $OUT/corpus-b8.json ] || mv $OUT/corpus-b8.json.partial $OUT/corpus-b8.json 2>/dev/null
grep -E '^(prepared|PyTorch|\| [a-z]|Geometric)' $OUT/corpus-b8.txt | cut -c1-300
left=$(( 580 - ($(date +%s) - T0) ))
[ $left -gt 40 ] && LIMIT=$left bash scripts/device-run.sh corpus zoo
grep -E "^weft: model|error" $OUT/zoo.txt | tail -3
echo "done $(( $(date +%s) - T0 )) s"
