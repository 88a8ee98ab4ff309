#!/usr/bin/env bash
# 2026-11-27g: issue 26's defaults figure with the PDL refit merged (main 464e391): the
# script of 27f call 5, as it stands — the 60 shapes beside a 48-config tuning, the
# fixed configs of 2026-11-24 and cuBLAS; the cubes 1984..2112.
exec bash measurements/h100-2026-11-27f/run5.sh
