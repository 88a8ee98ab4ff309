#!/usr/bin/env bash
# Prepared for the next session (not yet run): the fp32 rule's fit data with
# programmatic dependent launch on, for the 40 `mixed` shapes whose rows in
# ops/tests/data/h100-matmul-rule-tiles.csv are still the tested kernels' times of
# 2026-11-25 (the other 20 were timed again on 2026-11-27e, without PDL). Every tile of
# the rule's sub-space (k steps of 16, 4x8 lanes, no register cap) with every split the
# space offers, --trials: the data a refit of the model's issue term needs
# (docs/matmul-template.md, "The refit on the GPU, and landed"). Two calls:
#   bash measurements/h100-2026-11-27f/next-fit.sh 1   # the 29 small shapes
#   bash measurements/h100-2026-11-27f/next-fit.sh 2   # the 11 large ones
# then measurements/h100-2026-11-27e/rule-csv.py merges the JSON into the CSV and
# ops/tests/fit_fp32_rule.rs refits. The splits the space does not offer (32x64, 64x32
# and 16x128 tiles split; the 128x128 tile with steps of 8) need a third call shaped
# like h100-2026-11-27e/fit-rest.sh.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
SMALL="m=128,n=128,k=128;m=256,n=256,k=256;m=768,n=768,k=768;m=1024,n=1024,k=1024;m=127,n=127,k=127;m=1021,n=1021,k=1021;m=1000,n=1000,k=1000;m=999,n=1001,k=997;m=1531,n=769,k=383;m=4095,n=4097,k=63;m=1,n=1000,k=2048;m=8,n=4096,k=4096;m=16,n=1024,k=4096;m=4096,n=64,k=1024;m=64,n=64,k=32768;m=512,n=512,k=2048;m=128,n=2304,k=768;m=128,n=3072,k=768;m=1024,n=768,k=768;m=197,n=2304,k=768;m=197,n=3072,k=768;m=12544,n=64,k=147;m=3136,n=64,k=576;m=3136,n=256,k=64;m=784,n=512,k=128;m=49,n=2048,k=512;m=49,n=512,k=2048;m=64,n=64,k=64;m=17,n=33,k=65"
LARGE="m=1536,n=1536,k=1536;m=2048,n=2048,k=2048;m=3072,n=3072,k=3072;m=4096,n=4096,k=4096;m=2039,n=2039,k=2039;m=3001,n=3001,k=3001;m=1024,n=1024,k=8192;m=1024,n=3072,k=768;m=1024,n=768,k=3072;m=128,n=50257,k=768;m=2048,n=512,k=2048"
case "$1" in 1) S=$SMALL ;; 2) S=$LARGE ;; *) echo "usage: next-fit.sh 1|2" >&2; exit 2 ;; esac
start=$(date +%s)
timeout 560 .dev/bin/weft sweep --op matmul --shapes "$S" --target cuda --sample 1000 --only bk=16,lm=4,mb=0 \
  --trials --budget-ms 10 --json $OUT/fit-pdl-$1.json > $OUT/fit-pdl-$1.txt 2>&1
echo "fit part $1 rc=$? at $(( $(date +%s) - start )) s"; tail -3 $OUT/fit-pdl-$1.txt
