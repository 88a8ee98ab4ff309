#!/usr/bin/env bash
# After the tuner's timing fix (small kernels after the first config were timed as two
# single runs between event pairs): issue 26's fp16 figure again, the rule (the tensor-
# core cost model) against a 48-config tuning at the 60 `mixed` shapes on CUDA; and
# issue 28's Vulkan fp16 matmul at BERT's products, 1024^3 and 4096^3 (the whole space).
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
timeout 400 .dev/bin/weft sweep --op matmul-f16 --target cuda --shapes mixed --sample 48 --budget-ms 10 --trials \
  --json $OUT/f16-mixed.json > $OUT/f16-mixed.txt 2>&1; echo "cuda rc=$? at $(( $(date +%s) - start )) s"; tail -3 $OUT/f16-mixed.txt
S="m=128,n=2304,k=768;m=128,n=768,k=768;m=128,n=3072,k=768;m=128,n=768,k=3072;m=1024,n=1024,k=1024;m=4096,n=4096,k=4096"
timeout 170 .dev/bin/weft sweep --op matmul-f16 --target vulkan --shapes "$S" --sample 200 --budget-ms 10 --trials \
  --json $OUT/f16-vulkan.json > $OUT/f16-vulkan.txt 2>&1; echo "vulkan rc=$? at $(( $(date +%s) - start )) s"; tail -8 $OUT/f16-vulkan.txt
