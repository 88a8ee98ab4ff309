#!/usr/bin/env bash
# Issue 59 item 2: the cost rule on a Llama-shaped decoder (4 layers of TinyLlama, seq 128), on and off.
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
timeout 240 python3 scripts/speed.py --weft .dev/bin/weft --models llama_shaped,bert_base --no-torch-compile \
  --weft-targets cuda:f16 --jobs 2 --iters 30 --json $OUT/speed.json > $OUT/log.txt 2>&1
echo "speed exit $?"; grep -E '^\{' $OUT/log.txt | cut -c1-400
M=/tmp/weft-speed/llama_shaped
for rep in 1 2; do
  for mode in on off; do
    extra=""; [ $mode = off ] && extra="--disable-pass fusion-cost"
    line=$(timeout 100 .dev/bin/weft model run $M/model.onnx --target cuda --dtype f16 --inputs $M/in --iters 30 --no-check $extra 2>&1 | grep -E "^(median|compiled)" | tr '\n' ' ')
    echo "llama cost-$mode: $line" | tee -a $OUT/ab.txt
  done
done
timeout 100 .dev/bin/weft model graph $M/model.onnx --target cuda --dtype f16 2>&1 | grep "prologue of" > $OUT/decisions.txt
wc -l < $OUT/decisions.txt; head -3 $OUT/decisions.txt | cut -c1-300
timeout 100 .dev/bin/weft model bench $M/model.onnx --targets cuda --dtype f16 --iters 20 > $OUT/bench-on.txt 2>&1
timeout 100 .dev/bin/weft model bench $M/model.onnx --targets cuda --dtype f16 --iters 20 --disable-pass fusion-cost > $OUT/bench-off.txt 2>&1
head -25 $OUT/bench-on.txt; head -25 $OUT/bench-off.txt
