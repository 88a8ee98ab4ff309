#!/usr/bin/env bash
# Call 3 (eleventh session): constant factors on an attention's queries/keys folded into its scale, and the
# queries' computing chain stored at 64 query rows a head or more (bin/weft) against main at 6d8cba8
# (bin/weft-base): the Llama-shaped decoder, DistilBERT and BERT-base at batch 1 and 8, two rounds alternated;
# checks against ONNX Runtime; the decode step's kernels (4 layers) with both; then ncu of one layer of the
# decode step at prompt 1024 (main's kernels are the new binary's there: one position a step).
set -u
export OUT=${OUT:?}
T0=$(date +%s)
FRESH=1 bash scripts/device-run.sh setup > /tmp/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json HF_HUB_OFFLINE=1
W=.dev/bin/weft; B=.dev/bin/weft-base
{ $W --version; $B --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > $OUT/version.txt
python3 -c 'import onnxscript' 2>/dev/null || pip install --no-deps --no-index -q .dev/wheels/*.whl > /tmp/pip.txt 2>&1
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 8 --jobs 3 --models llama_shaped,distilbert,bert_base \
  --json /tmp/exp8.json > /tmp/exp8.txt 2>&1 &
timeout 150 python3 scripts/speed.py --dry-run --no-torch --batch 1 --jobs 3 --work /tmp/ws1 --models llama_shaped,distilbert,bert_base \
  --json /tmp/exp1.json > /tmp/exp1.txt 2>&1 &
wait
echo "export $(( $(date +%s) - T0 )) s"
for r in 1 2; do for bin in weft-base weft; do for m in llama_shaped distilbert bert_base; do for spec in "/tmp/ws1 b1" "/tmp/weft-speed b8"; do set -- $spec
  echo "$r $bin $m $2 $(timeout 60 .dev/bin/$bin model bench $1/$m/model.onnx --targets cuda --dtype f16 --no-kernels --iters 20 2>&1 | grep -E '^cuda' | cut -c1-100)"
done; done; done; done | tee $OUT/ab3.txt
echo "ab $(( $(date +%s) - T0 )) s"
timeout 60 $W model bench /tmp/weft-speed/llama_shaped/model.onnx --targets cuda --dtype f16 --iters 20 > $OUT/bench8-llama.txt 2>&1
for m in llama_shaped distilbert; do for d in /tmp/ws1 /tmp/weft-speed; do
  echo "$m $d: $(timeout 90 $W model check $d/$m/model.onnx --target cuda --dtype f16 2>&1 | tail -2 | tr '\n' ' ')"
done; done | tee $OUT/checks3.txt
echo "checks $(( $(date +%s) - T0 )) s"
for bin in weft-base weft; do
  timeout 60 .dev/bin/$bin model generate zoo:llama --layers 4 --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 16 \
    --iters 10 --kernels > $OUT/gen4-$bin.txt 2>&1
  grep -E "^prefill  |^decode step .*device" $OUT/gen4-$bin.txt | sed "s/^/$bin /"
done
echo "gen $(( $(date +%s) - T0 )) s"
timeout 150 ncu --clock-control none -k regex:layers_1_ -c 40 --section SpeedOfLight --section Occupancy \
  --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis \
  $W model generate zoo:llama --layers 2 --target cuda --dtype f16 --prompt-tokens 1024 --new-tokens 3 --iters 1 \
  > $OUT/ncu-decode.txt 2>&1
echo "ncu rc=$? $(( $(date +%s) - T0 )) s"
grep -E "^  k[0-9]+|Duration|DRAM Throughput|Achieved Occupancy|Registers Per" $OUT/ncu-decode.txt | head -120 > $OUT/ncu-summary.txt
