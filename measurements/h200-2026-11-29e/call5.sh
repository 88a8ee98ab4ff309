#!/usr/bin/env bash
# Call 5 of 2026-11-29 (fifth session): DenseNet after concat in place (corpus correctness on CUDA + speed),
# TinyLlama decode at batch 8 (per-kernel) and prompt 1024 after the split/skinny rule fixes.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
W=.dev/bin/weft
timeout 150 python3 scripts/corpus.py --weft $W --targets cuda:f32,cuda:f16 --models tv_densenet121,tv_inception_v3,tv_googlenet \
  --jobs 12 --weft-timeout 120 --json /tmp/corpus.json --doc $OUT/corpus.md > /tmp/corpus-log.txt 2>&1
echo "corpus exit $?"; grep -E "right|wrong|fail|refused" /tmp/corpus-log.txt | tail -5
echo "wall $(( $(date +%s) - T0 )) s"
timeout 200 python3 scripts/speed.py --weft $W --jobs 4 --iters 30 --batch 1 --models densenet121 \
  --weft-targets cuda:f16,cuda:f32 --json $OUT/speed.json --doc $OUT/speed.md > $OUT/speed-log.txt 2>&1
echo "speed exit $?"; grep -E '^\| [a-z]' $OUT/speed-log.txt | tail -3
echo "wall $(( $(date +%s) - T0 )) s"
timeout 130 $W model generate zoo:llama --target cuda --dtype f16 --batch 8 --prompt-tokens 128 --new-tokens 32 --iters 20 --kernels > $OUT/gen-b8.txt 2>&1
echo "b8 exit $?"; grep -E "^(decode step|bandwidth)" $OUT/gen-b8.txt
echo "wall $(( $(date +%s) - T0 )) s"
[ $(( $(date +%s) - T0 )) -lt 420 ] && timeout 150 $W model generate zoo:llama --target cuda --dtype f16 --batch 1 --prompt-tokens 1024 --new-tokens 32 --iters 20 > $OUT/gen-p1024.txt 2>&1
echo "p1024 exit $?"; grep -E "^(decode step|bandwidth|prefill)" $OUT/gen-p1024.txt
echo "wall $(( $(date +%s) - T0 )) s"
