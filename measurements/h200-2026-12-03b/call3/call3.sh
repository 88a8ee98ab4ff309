#!/usr/bin/env bash
# Call 3 (twenty-fourth session): multi-head attention at one query row. A Hugging Face Llama with
# 32 query heads each its own KV head (KV=32; 4 layers, hidden 2048, f32 export with past keys and
# values), where `attention-groups` has nothing to group and the split-KV rule refuses 32 heads:
# its decode step in f16 on cuda with the fused template (default) against the attention left
# unfused (`--disable-pass attention`), two alternated rounds, and the per-kernel table of each;
# beside it zoo:llama at batch 8 (32 groups of 8 rows: the same refusal), fused and unfused.
set -u
export OUT=${OUT:?}
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
W=.dev/bin/weft
R=/tmp/out3; mkdir -p $R
T=/tmp/mha
KV=32 timeout 200 python3 measurements/h200-2026-12-03b/call3/mha_past.py $T 4 128 16 > $R/export.txt 2>&1
g() { timeout 60 $W model generate "$@" --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 32 --iters 30; }
for r in 1 2; do
  for v in fused unfused; do
    extra=(); [ $v = unfused ] && extra=(--disable-pass attention)
    echo "== mha $v round $r"; g $T/model.onnx "${extra[@]}" 2>&1 | grep -E "^(decode step|weft:)"
    echo "== zoo b8 $v round $r"; g zoo:llama --layers 4 --batch 8 "${extra[@]}" 2>&1 | grep -E "^(decode step|weft:)"
  done
done > $R/ab.txt 2>&1
g $T/model.onnx --kernels > $R/mha-fused-kernels.txt 2>&1
g $T/model.onnx --kernels --disable-pass attention > $R/mha-unfused-kernels.txt 2>&1
timeout 60 $W model generate $T/model.onnx --target cuda --dtype f32 --prompt-ids $(cat $T/prompt.txt) \
  --new-tokens 16 --iters 3 > $R/mha-f32.txt 2>&1
echo "hf: $(cat $T/hf_ids.txt)" >> $R/mha-f32.txt
tar czf $OUT/call3.tgz -C $R .
cat $R/ab.txt; grep -E "^(sequence 0|hf:)" $R/mha-f32.txt
