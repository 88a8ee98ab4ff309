#!/usr/bin/env bash
# Splits in up to 64 parts (was 16): the rule (new) and the whole space tuned, beside
# cuBLAS, at the long reductions over few tiles of the `mixed` shapes, fp32 and fp16 on
# CUDA. The rule before is in fp32-rule-weft.json (fp32) and h100-2026-11-27/f16-*.json.
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
export WEFT_RECORDS=/tmp/none.json
S="m=64,n=64,k=32768;m=128,n=128,k=16384;m=256,n=256,k=8192;m=16,n=1024,k=4096;m=49,n=512,k=4608;m=8,n=4096,k=4096;m=1,n=1000,k=2048"
start=$(date +%s)
timeout 250 .dev/bin/weft sweep --op matmul --target cuda --shapes "$S" --sample 400 --budget-ms 10 --trials \
  --json $OUT/deep-fp32.json > $OUT/deep-fp32.txt 2>&1; echo "fp32 rc=$? at $(( $(date +%s) - start )) s"
timeout 250 .dev/bin/weft sweep --op matmul-f16 --target cuda --shapes "$S" --sample 160 --budget-ms 10 --trials \
  --json $OUT/deep-f16.json > $OUT/deep-f16.txt 2>&1; echo "f16 rc=$? at $(( $(date +%s) - start )) s"
cat $OUT/deep-fp32.txt $OUT/deep-f16.txt | grep -v "^weft"
