#!/usr/bin/env bash
# Call 6: A/B of the skinny-row prologue rule on whole decode steps (4 TinyLlama layers, f16, batch 1, prompt 128).
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
for round in 1 2; do for w in weft weft-noskinny; do
  echo "== $w (round $round)"
  timeout 60 .dev/bin/$w model generate zoo:llama --layers 4 --target cuda --dtype f16 --batch 1 --prompt-tokens 128 --new-tokens 16 --iters 30 > /tmp/g.txt 2>&1
  grep -E "^decode step .*device" /tmp/g.txt
done; done
