#!/usr/bin/env bash
# Call 1 (twenty-third session): decoders exported with past keys and values (optimum's form)
# through weft's KV-cache import on the H200. (1) The four small fixtures (TorchScript exports of
# HF Llama with and without position ids, GPT-2 at batch 2, Qwen2; weights filled by
# onnx/tests/past_generate.py, which prints ONNX Runtime's greedy ids) on cuda in f32 and f16 with
# --check. (2) A TinyLlama-shaped Llama (random weights) exported so (f32, external data): weft's
# ids on cuda in f32 against Hugging Face's greedy generate on the same model (f32, GPU); the
# decode step's speed in f16 on cuda (with its per-kernel table) and vulkan at prompt 128, beside
# zoo:llama of the same shape (weft's own builder).
set -u
export OUT=${OUT:?}
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
W=.dev/bin/weft
$W --version > $OUT/version.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
F=/tmp/fx; mkdir -p $F
for m in llama llama_nopos gpt2 qwen2; do
  p="1,5,9,200,17"; b=1
  [ $m = gpt2 ] && p="1,5,9,200,17;4,4,8,12,999" && b=2
  python3 onnx/tests/past_generate.py onnx/tests/fixtures/past/${m}_torchscript.onnx $F/$m "$p" 6 > $F/$m.ort
  echo "== $m ONNX Runtime: $(grep ^ids $F/$m.ort)"
  for d in f32 f16; do
    timeout 60 $W model generate $F/$m/model.onnx --target cuda --dtype $d --batch $b \
      --prompt-ids 1,5,9,200,17 --new-tokens 6 --iters 3 --check 2>&1 | grep -E "^(sequence|check|weft:)" | sed "s/^/$d /"
  done
done > $OUT/fixtures.txt 2>&1
# gpt2's second sequence differs from the first only in the reference (--prompt-ids gives both the same).
T=/tmp/tl; L=${LAYERS:-22}
timeout 300 python3 measurements/h200-2026-12-03/call1/tinyllama_past.py $T $L 128 16 > $OUT/export.txt 2>&1
echo "exported at $(date +%T)" >> $OUT/export.txt
timeout 120 $W model generate $T/model.onnx --target cuda --dtype f32 --prompt-ids $(cat $T/prompt.txt) \
  --new-tokens 16 --iters 5 > $OUT/tl-cuda-f32.txt 2>&1
echo "hf: $(cat $T/hf_ids.txt)" >> $OUT/tl-cuda-f32.txt
timeout 150 $W model generate $T/model.onnx --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 64 \
  --iters 20 --kernels > $OUT/tl-cuda-f16.txt 2>&1
timeout 150 $W model generate zoo:llama --layers $L --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 64 \
  --iters 20 > $OUT/zoo-cuda-f16.txt 2>&1
timeout 150 $W model generate $T/model.onnx --target vulkan --dtype f16 --prompt-tokens 128 --new-tokens 64 \
  --iters 20 > $OUT/tl-vulkan-f16.txt 2>&1
grep -H -E "^(decode step|prefill |sequence 0|hf:|weft:)" $OUT/tl-*.txt $OUT/zoo-*.txt
