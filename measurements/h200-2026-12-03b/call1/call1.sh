#!/usr/bin/env bash
# Call 1 (twenty-fourth session): the ONNX path's decode step with its query heads grouped by KV
# head (graph pass `attention-groups`) and its caches in f16 for an f16 run. (1) GPT-2 exported
# with past keys and values but no position ids (scripts/past_fixtures.py, family gpt2_nopos: the
# fixture for the KV-cache import's Gather of a position table), written to $OUT/fixtures. (2) The
# four small fixtures on cuda in f32 and f16 with --check. (3) A TinyLlama-shaped Llama (22 layers,
# random weights, TorchScript, f32 external data): ids on cuda f32 against Hugging Face's greedy
# generate; the decode step in f16 on cuda with its per-kernel table, with and without
# `--disable-pass attention-groups`, beside zoo:llama of the same shape; vulkan f16.
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
$W --version > $OUT/version.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
mkdir -p $OUT/fixtures
timeout 120 python3 scripts/past_fixtures.py --only gpt2_nopos --out $OUT/fixtures > $OUT/fixtures/export.txt 2>&1
T=/tmp/tl; L=${LAYERS:-22}
timeout 300 python3 measurements/h200-2026-12-03/call1/tinyllama_past.py $T $L 128 16 > $OUT/export.txt 2>&1 &
F=/tmp/fx; mkdir -p $F
for m in llama llama_nopos gpt2 qwen2; do
  b=1; [ $m = gpt2 ] && b=2
  python3 onnx/tests/past_generate.py onnx/tests/fixtures/past/${m}_torchscript.onnx $F/$m "1,5,9,200,17" 6 > $F/$m.ort
  echo "== $m ONNX Runtime: $(grep ^ids $F/$m.ort)"
  for d in f32 f16; do
    timeout 60 $W model generate $F/$m/model.onnx --target cuda --dtype $d --batch $b \
      --prompt-ids 1,5,9,200,17 --new-tokens 6 --iters 3 --check 2>&1 | grep -E "^(sequence|check|weft:|memory)" | sed "s/^/$d /"
  done
done > $OUT/fixtures.txt 2>&1
wait
echo "exported at $(date +%T)" >> $OUT/export.txt
timeout 120 $W model generate $T/model.onnx --target cuda --dtype f32 --prompt-ids $(cat $T/prompt.txt) \
  --new-tokens 16 --iters 5 > $OUT/tl-cuda-f32.txt 2>&1
echo "hf: $(cat $T/hf_ids.txt)" >> $OUT/tl-cuda-f32.txt
timeout 150 $W model generate $T/model.onnx --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 64 \
  --iters 20 --kernels > $OUT/tl-cuda-f16.txt 2>&1
for r in 1 2; do
  timeout 150 $W model generate zoo:llama --layers $L --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 64 \
    --iters 20 > $OUT/zoo-cuda-f16-$r.txt 2>&1
  timeout 150 $W model generate $T/model.onnx --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 64 \
    --iters 20 > $OUT/tl-cuda-f16-$r.txt 2>&1
  timeout 150 $W model generate $T/model.onnx --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 64 \
    --iters 20 --disable-pass attention-groups > $OUT/tl-cuda-f16-ungrouped-$r.txt 2>&1
done
timeout 150 $W model generate $T/model.onnx --target vulkan --dtype f16 --prompt-tokens 128 --new-tokens 64 \
  --iters 20 > $OUT/tl-vulkan-f16.txt 2>&1
grep -H -E "^(decode step|prefill |sequence 0|hf:|weft:|memory)" $OUT/tl-*.txt $OUT/zoo-*.txt
cat $OUT/fixtures.txt $OUT/fixtures/export.txt
# Buckets of configs chosen at launch (item 1): zoo:bert_base compiled for seq 1..512 once and per
# bucket (16, 64, 256, 512), run at 12, 100 and 512 tokens on cuda f16; device time of each run.
for b in auto none; do
  echo "== bert buckets=$b"
  timeout 200 $W model run zoo:bert_base --dim seq=1..512 --dim-value seq=12,100,512 --target cuda --dtype f16 \
    --buckets $b --iters 50 2>&1 | grep -E "^(symbol|bucket|compiled|run|weft:)"
done > $OUT/buckets.txt 2>&1
cat $OUT/buckets.txt
