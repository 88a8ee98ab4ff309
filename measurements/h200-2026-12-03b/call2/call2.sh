#!/usr/bin/env bash
# Call 2 (twenty-fourth session), on the machine call 1 left warm: what call 1 wrote but could not
# bring back (its files past the eighth: /tmp/out1 if it is still there), then what it had no time
# for: vulkan f16 of the TinyLlama-shaped export, zoo:llama beside it, and buckets of configs on a
# symbolic BERT. Everything comes back in one archive.
set -u
export OUT=${OUT:?}
export XDG_RUNTIME_DIR=/tmp WEFT_RECORDS=/tmp/none.json
[ -x .dev/bin/weft ] || FRESH=1 bash scripts/device-run.sh setup > $OUT/setup.txt 2>&1
W=.dev/bin/weft
R=/tmp/out2; mkdir -p $R
ls /tmp > $R/tmp-listing.txt 2>&1
T=/tmp/tl
if [ ! -f $T/model.onnx ]; then
  timeout 200 python3 measurements/h200-2026-12-03/call1/tinyllama_past.py $T 22 128 16 > $R/export.txt 2>&1
fi
mkdir -p $R/fixtures
timeout 100 python3 scripts/past_fixtures.py --only gpt2_nopos --out $R/fixtures > $R/fixtures/export.txt 2>&1 &
timeout 100 $W model generate $T/model.onnx --target cuda --dtype f32 --prompt-ids $(cat $T/prompt.txt) \
  --new-tokens 16 --iters 5 > $R/tl-cuda-f32.txt 2>&1
echo "hf: $(cat $T/hf_ids.txt)" >> $R/tl-cuda-f32.txt
timeout 100 $W model generate zoo:llama --layers 22 --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 64 \
  --iters 20 > $R/zoo-cuda-f16.txt 2>&1
timeout 100 $W model generate $T/model.onnx --target cuda --dtype f16 --prompt-tokens 128 --new-tokens 64 \
  --iters 20 --kernels > $R/tl-cuda-f16-kernels.txt 2>&1
timeout 100 $W model generate $T/model.onnx --target vulkan --dtype f16 --prompt-tokens 128 --new-tokens 64 \
  --iters 20 > $R/tl-vulkan-f16.txt 2>&1
wait
for b in auto none; do
  echo "== bert buckets=$b"
  timeout 100 $W model run zoo:bert_base --dim seq=1..512 --dim-value seq=12,100,512 --target cuda --dtype f16 \
    --buckets $b --iters 50 2>&1 | grep -E "^(symbol|bucket|compiled|run|weft:)"
done > $R/buckets.txt 2>&1
tar czf $OUT/call2.tgz -C $R .
grep -H -E "^(decode step|prefill |sequence 0|hf:|weft:|memory)" $R/tl-*.txt $R/zoo-*.txt; cat $R/buckets.txt $R/fixtures/export.txt | tail -30
