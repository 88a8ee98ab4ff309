#!/usr/bin/env bash
# The fp16 rule with split wgmma tiles among its candidates, checked on the H100: at the
# 60 `mixed` shapes, the rule's pick beside 48 configs sampled from the wgmma sub-space
# (whole and split), every config timed written out (the data `ops/tests/rule_f16.rs`
# checks the rule on). Two parts, one call each.
export WEFT_RECORDS=/tmp/none.json
start=$(date +%s)
P=${1:-1/2}
N=${P%/*}
timeout 560 .dev/bin/weft sweep --op matmul-f16 --target cuda --shapes mixed --part $P --sample 48 --only wg=1 \
  --budget-ms 10 --trials --json $OUT/f16-wgmma-splits-$N.json > $OUT/f16-wgmma-splits-$N.txt 2>&1
echo "rc=$? at $(( $(date +%s) - start )) s"; tail -4 $OUT/f16-wgmma-splits-$N.txt
# The models by this rule, beside the records `weft model tune` made in split.sh.
if [ "$N" = 1 ]; then
  for i in 1 2; do for m in bert_base gpt2; do
    echo "$m rule: $(timeout 60 .dev/bin/weft model bench zoo:$m --seq 128 --dtype f16 --targets cuda --no-kernels 2>&1 | sed -n 3p)"
    echo "$m records: $(timeout 60 .dev/bin/weft model bench zoo:$m --seq 128 --dtype f16 --targets cuda --no-kernels --records .dev/records-cuda.json 2>&1 | sed -n 3p)"
  done; done | tee $OUT/rule-splits-bench.txt
  timeout 60 .dev/bin/weft model run zoo:gpt2 --batch 2 --seq 37 --dtype f16 --target cuda 2>&1 | grep -E "^(median|error)"
  timeout 60 .dev/bin/weft model run zoo:bert_base --dtype f16 --target cuda 2>&1 | grep -E "^(median|error)"
fi
