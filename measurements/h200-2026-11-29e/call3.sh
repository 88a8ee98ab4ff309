#!/usr/bin/env bash
# Call 3 of 2026-11-29 (fifth session): gemv configs on a decode step whose weights come from HBM
# (4 TinyLlama layers, 88 MB each, past the 50 MB L2), WEFT_GEMV overriding the rule.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
for c in rule threads=256,nt=2,unroll=8,shuffle=32 threads=512,nt=2,unroll=8,shuffle=32 threads=512,nt=4,unroll=8,shuffle=32 \
  threads=1024,nt=4,unroll=4,shuffle=32 threads=256,nt=1,unroll=8,shuffle=32 threads=512,nt=1,unroll=8,shuffle=32 \
  threads=512,nt=2,unroll=16,shuffle=32 threads=1024,nt=2,unroll=8,shuffle=32 threads=1024,nt=8,unroll=4,shuffle=32; do
  if [ $c = rule ]; then unset WEFT_GEMV; else export WEFT_GEMV=$c; fi
  echo "== $c"
  timeout 60 $W model generate zoo:llama --layers 4 --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 16 --iters 30 --kernels > /tmp/g.txt 2>&1
  grep -E "^(decode step .*device|bandwidth)" /tmp/g.txt
  grep -E "gemv" /tmp/g.txt | awk '{print $(NF-1), $NF, $2}' | sort -k3 | awk '{a[$3]=a[$3]" "$1} END {for (k in a) print k, a[k]}' | cut -c1-200 | sort | head -8
done > $OUT/configs.txt 2>&1
cat $OUT/configs.txt | grep -E "^==|decode step"
echo "wall $(( $(date +%s) - T0 )) s"
