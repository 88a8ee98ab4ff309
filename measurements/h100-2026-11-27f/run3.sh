#!/usr/bin/env bash
# 2026-11-27f, call 3 (main 6b0aa4e: PDL at block exit, the fp32 refit): the CNN rows of
# results.md again, by the rule, PyTorch in the same call — the script prepared the
# session before, run as it stands.
exec bash measurements/h100-2026-11-27e/next-cnn-rows.sh
