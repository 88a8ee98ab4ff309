#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention at the shapes of weft's `attention-f16` op, for
comparison in one run.

Batch 1, `--heads` heads of `--dim`, sequence lengths `--seqs`, fp16, causal and not, on
the flash-attention backend (PyTorch's FlashAttention-2 kernels; `--backend efficient`
or `math` for the others). Times are GPU time per call from CUDA events around 200
back-to-back calls (median over 7 repeats), the way `weft bench` times kernels.

    python3 scripts/torch_attention.py --seqs 128,512,2048 --heads 12 --dim 64

Prints one JSON object per line: {"op", "bh", "s", "t", "d", "causal", "backend", "ms"}.
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "math": SDPBackend.MATH,
}


def time_ms(fn, calls=200, repeats=7):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", default="128,512,2048")
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--backend", default="flash", choices=sorted(BACKENDS))
    args = ap.parse_args()
    torch.manual_seed(0)
    for s in [int(x) for x in args.seqs.split(",")]:
        for causal in (False, True):
            q, k, v = (
                torch.randn(1, args.heads, s, args.dim, device="cuda", dtype=torch.float16)
                for _ in range(3)
            )
            with sdpa_kernel(BACKENDS[args.backend]):
                ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
            print(
                json.dumps(
                    {
                        "op": "attention-f16",
                        "bh": args.heads,
                        "s": s,
                        "t": s,
                        "d": args.dim,
                        "causal": int(causal),
                        "backend": args.backend,
                        "ms": ms,
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
