#!/usr/bin/env bash
# 2026-11-27f, call 4 (main 6b0aa4e). ResNet-50 f16 at batch 8, the row call 3 read at
# 0.99x torch.compile by the rule: where its time goes (per-kernel table), what tuning
# its anchors gives (`weft model tune`, records to $OUT), rule and tuned alternating,
# and PyTorch (torch.compile, CUDA graph) again in the same call.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
start=$(date +%s)
M="zoo:resnet50 --dtype f16 --batch 8"
timeout 60 $W model bench $M --targets cuda > $OUT/bench-b8-rule.txt 2>&1
echo "bench rc=$? at $(( $(date +%s) - start )) s"
timeout 200 $W model tune $M --target cuda --records $OUT/records.json > $OUT/tune-b8.txt 2>&1
echo "tune rc=$? at $(( $(date +%s) - start )) s"; tail -4 $OUT/tune-b8.txt
timeout 60 $W model bench $M --targets cuda --records $OUT/records.json > $OUT/bench-b8-tuned.txt 2>&1
{
for r in /tmp/none.json $OUT/records.json /tmp/none.json $OUT/records.json; do
  echo "records $(basename $r): $(timeout 40 $W model run $M --target cuda --records $r 2>&1 | grep -E '^median' | tr '\n' ' ')"
done
} > $OUT/b8-ab.txt 2>&1; cat $OUT/b8-ab.txt
timeout 150 python3 scripts/torch_models.py --models resnet50 --batch 8 --dtypes f16 --compile 2>/dev/null > $OUT/torch-b8.jsonl
echo "torch rc=$? at $(( $(date +%s) - start )) s"; cat $OUT/torch-b8.jsonl
