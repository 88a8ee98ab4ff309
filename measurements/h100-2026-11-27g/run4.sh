#!/usr/bin/env bash
# 2026-11-27g, call 4: the sweeps of run4-sweeps.sh alone.
export WEFT_RECORDS=/tmp/none.json
[ -d .dev/bin ] || tar xJf .dev/pack.tar.xz -C .dev
start=$(date +%s)
source measurements/h100-2026-11-27g/run4-sweeps.sh
