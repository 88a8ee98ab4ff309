#!/usr/bin/env bash
# One model ($1) after the sibling-product merge: untuned, then `weft model tune`,
# then tuned, each checked against the float64 reference; per-kernel times of the tuned
# build. Records go to $OUT/records-$1.json.
m=$1
W=.dev/bin/weft
R=$OUT/records-$m.json
echo "== $m seq 128 f16 cuda, untuned"
WEFT_RECORDS=/tmp/none.json $W model run zoo:$m --seq 128 --dtype f16 --target cuda --iters 20 2>&1 | grep -E "compiled|median|error"
echo "== tune"
$W model tune zoo:$m --seq 128 --dtype f16 --target cuda --records $R --trials 12 2>&1 | tail -12
echo "== $m seq 128 f16 cuda, tuned"
WEFT_RECORDS=$R $W model run zoo:$m --seq 128 --dtype f16 --target cuda --iters 20 2>&1 | grep -E "compiled|median|error"
WEFT_RECORDS=$R $W model bench zoo:$m --seq 128 --dtype f16 --targets cuda > $OUT/$m-tuned-bench.txt 2>&1
head -4 $OUT/$m-tuned-bench.txt
