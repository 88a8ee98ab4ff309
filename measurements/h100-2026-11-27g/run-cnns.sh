#!/usr/bin/env bash
# 2026-11-27g: the CNN rows of results.md again on this session's binary (global pools
# through the row template's shuffles; the fp32 rule as it stands): the script of 27e,
# run as it stands.
exec bash measurements/h100-2026-11-27e/next-cnn-rows.sh
