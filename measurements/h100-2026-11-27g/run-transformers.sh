#!/usr/bin/env bash
# 2026-11-27g: the transformer rows of results.md again (subgroup shuffles in the layer
# norms, attention's causal rule): PyTorch (eager, one CUDA graph, torch.compile) and weft
# by the rule (no records) on CUDA and Vulkan in one `weft report` call — the script of
# 27e call 5 (`h100-2026-11-27e/run5.sh`), run as it stands on this session's binary.
exec bash measurements/h100-2026-11-27e/run5.sh
