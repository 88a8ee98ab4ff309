#!/usr/bin/env bash
# Prepared in 2026-11-27i, not yet run: the register-capped fp32 tiles (mb > 0) at the 60
# `mixed` shapes, every config and split timed (`--trials`): the data for weighing them in
# the rule, whose cost model counts a capped tile's blocks by its cap since 27i
# (`ThreadTile::min_blocks`). Why: at 2048x2048x32 the fastest config timed is one
# (mb=4, 9.9 us) and the rule's pick runs 11.7 (the fixed default, mb=2, 10.2). About
# 3 minutes on an H100. Then `rule-csv.py`-style: append the trials to
# ops/tests/data/h100-matmul-rule-tiles.csv and let `tiles()` keep mb > 0.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
W=.dev/bin/weft
for mb in 2 4; do
  timeout 280 $W sweep --op matmul --target cuda --shapes mixed --sample 64 --only mb=$mb --trials --budget-ms 10 \
    --json $OUT/capped-mb$mb.json > $OUT/capped-mb$mb.txt 2>&1
  echo "mb=$mb rc=$?"; grep -vE "^weft:" $OUT/capped-mb$mb.txt | tail -2
done
