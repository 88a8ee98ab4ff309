#!/usr/bin/env bash
# Call 3 of 2026-11-29 (eighth session): where the time goes where weft is behind.
# - batch 8, cuda f16: per-kernel tables of the CNNs behind torch.compile in call 2;
# - BERT-base at batch 1: the zoo's and Hugging Face's export's per-kernel tables (19% apart);
# - one TinyLlama-shaped decode step (2 layers) under ncu: each kernel's DRAM throughput.
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
for f in .gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
mkdir -p /tmp/c3
( python3 scripts/speed.py --weft $W --jobs 8 --batch 8 --no-torch --weft-targets cuda:f16 --dry-run \
    --models resnet50,inception_v3,convnext_tiny,efficientnet_b0,resnext50_32x4d,llama_shaped --work /tmp/b8 > /tmp/c3/prep8.txt 2>&1
  python3 scripts/speed.py --weft $W --jobs 2 --batch 1 --no-torch --weft-targets cuda:f16 --dry-run \
    --models bert_base --work /tmp/b1 > /tmp/c3/prep1.txt 2>&1 ) &
L="--layers 2 --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 3 --iters 1"
timeout 150 ncu --clock-control none --cache-control none --graph-profiling node --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
  $W model generate zoo:llama $L > /tmp/c3/ncu-decode.csv 2> /tmp/c3/ncu-decode.err
echo "ncu rc=$? $(( $(date +%s) - T0 )) s"; tail -2 /tmp/c3/ncu-decode.err
timeout 60 $W model generate zoo:llama $L --kernels > /tmp/c3/gen2-kernels.txt 2>&1
wait; echo "prepared $(( $(date +%s) - T0 )) s"; tail -1 /tmp/c3/prep8.txt | cut -c1-200
timeout 40 $W model bench zoo:bert_base --targets cuda --dtype f16 --seq 128 > /tmp/c3/bench-zoo-bert.txt 2>&1
timeout 40 $W model bench /tmp/b1/bert_base/model.onnx --targets cuda --dtype f16 > /tmp/c3/bench-hf-bert.txt 2>&1
grep -E "^cuda " /tmp/c3/bench-*bert.txt
for m in resnet50 inception_v3 convnext_tiny efficientnet_b0 resnext50_32x4d llama_shaped; do
  [ $(( $(date +%s) - T0 )) -gt 330 ] && break
  timeout 45 $W model bench /tmp/b8/$m/model.onnx --targets cuda --dtype f16 > /tmp/c3/bench8-$m.txt 2>&1
  echo "$m $(grep -E '^cuda ' /tmp/c3/bench8-$m.txt)"
done
tar czf $OUT/c3.tgz -C /tmp c3
echo "done $(( $(date +%s) - T0 )) s"
