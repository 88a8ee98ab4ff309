#!/usr/bin/env bash
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
timeout 200 python3 .dev/canon_ab.py /tmp/ab > $OUT/export.txt 2>&1 || tail -5 $OUT/export.txt
for m in bert llama4; do
  for rep in 1 2; do
    for mode in on off; do
      extra=""; [ $mode = off ] && extra="--disable-pass activations,rms-norms"
      line=$(timeout 120 .dev/bin/weft model run /tmp/ab/$m/model.onnx --target cuda --dtype f16 --inputs /tmp/ab/$m/in --iters 50 --no-check $extra 2>&1 | grep -E "^(median|compiled|partition)" | tr '\n' ' ')
      echo "$m canon-$mode: $line" | tee -a $OUT/ab.txt
    done
  done
done
timeout 120 .dev/bin/weft model bench /tmp/ab/bert/model.onnx --targets cuda --dtype f16 --iters 30 > $OUT/bert-bench.txt 2>&1
timeout 120 .dev/bin/weft model bench /tmp/ab/bert/model.onnx --targets cuda --dtype f16 --iters 30 --disable-pass activations,rms-norms > $OUT/bert-bench-off.txt 2>&1
head -30 $OUT/bert-bench.txt
